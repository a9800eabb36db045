import Foundation
import PinStore
import PinStoreDevServer

/// A plain-http server on 127.0.0.1 that publishes CRLs, as a CA's distribution point does:
/// what it answers per path can be changed while it runs (a CRL, an HTTP error, a response that
/// never comes), and it counts the requests per path.
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
    private let state: Locked<(answers: [String: Answer], counts: [String: Int])>

    private init(server: ListServer, state: Locked<(answers: [String: Answer], counts: [String: Int])>) {
        self.server = server
        self.state = state
        self.baseURL = server.baseURL
    }

    /// Starts a server answering 404 for every path until ``serve(_:at:)``.
    public static func start() async throws -> TestCRLServer {
        let state = Locked<(answers: [String: Answer], counts: [String: Int])>(([:], [:]))
        let server = try await ListServer.start(port: 0) { request in
            let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let answer = state.withLock { state -> Answer? in
                state.counts[path, default: 0] += 1
                return state.answers[path]
            }
            switch answer {
            case .crl(let der)?: return ListServerResponse(status: 200, headers: [("Content-Type", "application/pkix-crl")], body: der)
            case .status(let code)?: return ListServerResponse(status: code)
            case .hang?: return ListServerResponse(status: 200, body: Data(), delay: 3_600)
            case nil: return ListServerResponse(status: 404)
            }
        }
        return TestCRLServer(server: server, state: state)
    }

    /// Answers `answer` for `path` (relative to ``baseURL``, e.g. `"intermediate.crl"`) from now on.
    public func serve(_ answer: Answer, at path: String) {
        state.withLock { $0.answers[path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))] = answer }
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
