import Foundation
import PinStore
import PinStoreDevServer

/// A plain-http server on 127.0.0.1 that publishes CRLs, as a CA's distribution point does:
/// what it answers per path can be changed while it runs (a CRL, an HTTP error, a response that
/// never comes, one that drips a byte at a time, a redirect), and it counts the requests per
/// path, the requests held open at once and the ones a client gave up on.
///
/// ```swift
/// let crls = try await TestCRLServer.start()
/// let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
/// crls.serve(.crl(try pki.crl(by: .intermediate, revoking: [pki.leaf.certificate])), at: "intermediate.crl")
/// crls.serve(.crl(try pki.crl(by: .root)), at: "root.crl")
/// ```
public final class TestCRLServer: Sendable {
    /// What the server answers for a path.
    public enum Answer: Sendable {
        /// The bytes with status 200 (a CRL, or anything else a test wants a client to read).
        case crl(Data)
        /// An HTTP status with an empty body.
        case status(Int)
        /// No answer for an hour (a server that hangs).
        case hang
    }

    /// `http://127.0.0.1:PORT/`.
    public let baseURL: URL
    private let server: ListServer
    private let state: Locked<(answers: [String: Served], counts: [String: Int])>

    /// What is served at a path: an ``Answer``, or one of the answers the `serve...` methods set.
    enum Served: Sendable {
        case answer(Answer)
        case drip(Data, interval: TimeInterval)
        case redirect(URL, status: Int)
    }

    private init(server: ListServer, state: Locked<(answers: [String: Served], counts: [String: Int])>) {
        self.server = server
        self.state = state
        self.baseURL = server.baseURL
    }

    /// Starts a server answering 404 for every path until ``serve(_:at:)``.
    public static func start() async throws -> TestCRLServer {
        let state = Locked<(answers: [String: Served], counts: [String: Int])>(([:], [:]))
        let server = try await ListServer.start(port: 0) { request in
            let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let served = state.withLock { state -> Served? in
                state.counts[path, default: 0] += 1
                return state.answers[path]
            }
            switch served {
            case .answer(.crl(let der))?: return ListServerResponse(status: 200, headers: [("Content-Type", "application/pkix-crl")], body: der)
            case .answer(.status(let code))?: return ListServerResponse(status: code)
            case .answer(.hang)?: return ListServerResponse(status: 200, body: Data(), delay: 3_600)
            case .drip(let bytes, let interval)?: return ListServerResponse(status: 200, body: bytes, dripInterval: interval)
            case .redirect(let location, let status)?: return ListServerResponse(status: status, headers: [("Location", location.absoluteString)])
            case nil: return ListServerResponse(status: 404)
            }
        }
        return TestCRLServer(server: server, state: state)
    }

    /// Answers `answer` for `path` (relative to ``baseURL``, e.g. `"intermediate.crl"`) from now on.
    public func serve(_ answer: Answer, at path: String) {
        serve(.answer(answer), at: path)
    }

    /// Answers `bytes` with status 200 for `path` from now on, one byte every `interval`
    /// seconds after the head (which announces the whole length): a server that keeps a
    /// download alive past any idle timeout. Any method gets it (a POSTed report too).
    ///
    /// ```swift
    /// // Four minutes for 960 bytes; a client with a total deadline gives up long before.
    /// crls.serveDripping(Data(repeating: 0x30, count: 960), every: 0.25, at: "intermediate.crl")
    /// ```
    public func serveDripping(_ bytes: Data, every interval: TimeInterval, at path: String) {
        serve(.drip(bytes, interval: interval), at: path)
    }

    /// Answers a redirect (`status`, 302 by default) to `location` for `path` from now on.
    public func serveRedirect(to location: URL, status: Int = 302, at path: String) {
        serve(.redirect(location, status: status), at: path)
    }

    private func serve(_ served: Served, at path: String) {
        state.withLock { $0.answers[path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))] = served }
    }

    /// The requests received for any path so far.
    public var totalRequestCount: Int {
        server.requestCount
    }

    /// The requests the server holds now: received, not answered to their end, on a connection
    /// still open.
    public var openRequestCount: Int {
        server.openRequests
    }

    /// The most requests the server held at once so far (``openRequestCount`` at its highest):
    /// what a client's limit on concurrent fetches is checked against.
    public var maximumConcurrentRequests: Int {
        server.maximumOpenRequests
    }

    /// The requests whose connection the client closed before their answer ended (a client
    /// that gave up on a hanging or dripping answer, or cancelled it).
    public var abandonedRequestCount: Int {
        server.abandonedRequests
    }

    /// The requests received for `path` so far.
    public func requestCount(for path: String) -> Int {
        state.withLock { $0.counts[path.trimmingCharacters(in: CharacterSet(charactersIn: "/")), default: 0] }
    }

    /// Stops the server. Calling it twice is harmless.
    public func shutdown() async throws {
        try await server.shutdown()
    }
}
