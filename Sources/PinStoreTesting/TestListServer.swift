import Foundation
import PinStore
import PinStoreDevServer

/// A list server on 127.0.0.1 (an ephemeral port, plain http, which a store accepts for a
/// loopback host) serving signed fixture lists in static or challenge mode, like the deployed
/// servers. ``publish(_:)`` replaces the list it serves.
///
/// ```swift
/// let server = try await TestListServer.start(serving: TestPinList(pinning: [pki.leaf.certificate]),
///                                             signedWith: key)
/// defer { Task { try await server.shutdown() } }
/// // PinStore.Configuration(serviceURL: server.listURL, publicKey: key.publicKeyBase64,
/// //                        requireListSignature: true)
/// ```
///
/// It answers every path alike; ``listURL`` names `/list.json`. Each server owns one thread
/// until ``shutdown()``.
///
/// Like `pinstore serve`, a static list goes out with `ETag` (the SHA-256 of its bytes),
/// `Last-Modified` and `Cache-Control: public, max-age=60, must-revalidate`, and a `GET` whose
/// `If-None-Match` or `If-Modified-Since` names the bytes served gets `304 Not Modified`;
/// challenge-mode responses carry `Cache-Control: no-store` and are never `304`.
public final class TestListServer: Sendable {
    /// The mode the server answers in.
    public let mode: TestListMode
    /// The key lists are signed with.
    public let signingKey: TestListSigningKey
    /// `http://127.0.0.1:PORT/list.json`.
    public let listURL: URL

    private let server: ListServer
    private let responder: Locked<ListServerResponder>
    /// Shared by every static list published, so the same bytes keep their `Last-Modified`.
    private let tracker: RepresentationTracker

    private init(mode: TestListMode, signingKey: TestListSigningKey, server: ListServer, responder: Locked<ListServerResponder>,
                 tracker: RepresentationTracker) {
        self.mode = mode
        self.signingKey = signingKey
        self.server = server
        self.responder = responder
        self.tracker = tracker
        self.listURL = server.baseURL.appendingPathComponent("list.json")
    }

    /// Starts a server answering with `list`, signed with `signingKey`, in `mode`.
    ///
    /// - Throws: a `PinStoreError` when the list cannot be signed (clients would refuse it), or
    ///   an error from the server when it cannot listen.
    public static func start(serving list: TestPinList, signedWith signingKey: TestListSigningKey,
                             mode: TestListMode = .staticList) async throws -> TestListServer {
        let tracker = RepresentationTracker()
        let responder = Locked(try Self.responder(for: list, signingKey: signingKey, mode: mode, tracker: tracker))
        let server = try await ListServer.start(port: 0) { request in
            responder.withLock { $0 }(request)
        }
        return TestListServer(mode: mode, signingKey: signingKey, server: server, responder: responder, tracker: tracker)
    }

    /// Runs `body` with a started server and shuts the server down afterwards, also when
    /// `body` throws.
    public static func withServer<Result>(serving list: TestPinList, signedWith signingKey: TestListSigningKey,
                                          mode: TestListMode = .staticList,
                                          isolation: isolated (any Actor)? = #isolation,
                                          _ body: (TestListServer) async throws -> Result) async throws -> Result {
        let server = try await start(serving: list, signedWith: signingKey, mode: mode)
        do {
            let result = try await body(server)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// Serves `list` from now on, signed with a timestamp later than the previous list's (unless
    /// the list names its own). A store sees it on its next download (`update(mode: .forced)`).
    public func publish(_ list: TestPinList) throws(PinStoreError) {
        let next = try Self.responder(for: list, signingKey: signingKey, mode: mode, tracker: tracker)
        responder.withLock { $0 = next }
    }

    /// Serves `body` as it is from now on, in static mode (no signing, no timestamp): a list
    /// made elsewhere (a file the team's pipeline signed), or a tampered or truncated one, for a
    /// test that the store refuses it and keeps its pins.
    ///
    /// ```swift
    /// var tampered = try key.signedStaticList(list)
    /// tampered[tampered.count / 2] ^= 1
    /// server.publish(body: tampered)
    /// #expect(await store.update(mode: .forced) != .ok)
    /// ```
    public func publish(body: Data) {
        let next = ListResponders.staticList(body, tracker: tracker)
        responder.withLock { $0 = next }
    }

    /// Requests received so far.
    public var requestCount: Int { server.requestCount }

    /// Stops listening, closes open connections and ends the server's thread. Calling it again
    /// does nothing.
    public func shutdown() async throws {
        try await server.shutdown()
    }

    private static func responder(for list: TestPinList, signingKey: TestListSigningKey, mode: TestListMode,
                                  tracker: RepresentationTracker) throws(PinStoreError) -> ListServerResponder {
        var stamped = list
        stamped.timestamp = list.timestamp ?? TestListSigningKey.nextTimestamp()
        switch mode {
        case .staticList:
            return ListResponders.staticList(try signingKey.signedStaticList(stamped), tracker: tracker)
        case .challenge:
            // The body is fixed per list (its timestamp too); only the response signature is per request.
            let body = try signingKey.challengeResponse(stamped, challenge: "").body
            return ListResponders.challengeList(body: body, signingKey: signingKey.privateKey)
        }
    }
}
