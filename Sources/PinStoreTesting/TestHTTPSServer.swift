import Foundation
import PinStore
import PinStoreDevServer

/// An HTTPS server on 127.0.0.1 (an ephemeral port) presenting a chosen certificate chain
/// (SwiftNIO and swift-nio-ssl): the partner API a pinned client calls in a test.
///
/// ```swift
/// try await TestHTTPSServer.withServer(presenting: pki.impostor) { server in
///     _ = try await session.data(from: server.url(host: "localhost"))   // refused by pinning
/// }
/// ```
///
/// It answers every HTTP/1.1 request with `200` and ``responseBody`` as `text/plain`. It
/// listens on the IPv4 loopback address only; reach it through a name that resolves there
/// (`localhost`) and that the presented leaf carries. Each server owns one thread until
/// ``shutdown()``.
public final class TestHTTPSServer: Sendable {
    /// What every request is answered with.
    public static let responseBody = "hello from the PinStoreTesting server"

    /// The chain and key the server presents.
    public let identity: TestIdentity
    /// The TCP port it listens on.
    public let port: Int

    private let server: ListServer

    private init(identity: TestIdentity, server: ListServer) {
        self.identity = identity
        self.server = server
        self.port = server.port
    }

    /// Starts a server presenting `identity`'s chain with its key.
    public static func start(presenting identity: TestIdentity) async throws -> TestHTTPSServer {
        let tls = ListServerTLS(certificateChainPEM: identity.certificateChainPEM, privateKeyPEM: identity.privateKeyPEM)
        let body = Data(responseBody.utf8)
        let server = try await ListServer.start(port: 0, tls: tls) { _ in
            ListServerResponse(status: 200, headers: [("Content-Type", "text/plain")], body: body)
        }
        return TestHTTPSServer(identity: identity, server: server)
    }

    /// Runs `body` with a started server and shuts the server down afterwards, also when
    /// `body` throws.
    public static func withServer<Result>(presenting identity: TestIdentity,
                                          isolation: isolated (any Actor)? = #isolation,
                                          _ body: (TestHTTPSServer) async throws -> Result) async throws -> Result {
        let server = try await start(presenting: identity)
        do {
            let result = try await body(server)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// `https://HOST:PORT/PATH`, by default for the leaf's first DNS name.
    public func url(host: String? = nil, path: String = "/") -> URL {
        let name = host ?? identity.certificate.dnsNames.first ?? "localhost"
        let trimmed = path.hasPrefix("/") ? String(path.dropFirst()) : path
        // Names are checked when the certificate is made (letters, digits, '-', '.'), so the
        // text is always a URL; the fallback is never taken.
        return URL(string: "https://\(name):\(port)/\(trimmed)") ?? URL(fileURLWithPath: "/")
    }

    /// Requests that reached the HTTP layer (after a completed handshake) so far: a refused
    /// client sends none.
    public var requestCount: Int { server.requestCount }

    /// Stops listening, closes open connections and ends the server's thread. Calling it again
    /// does nothing.
    public func shutdown() async throws {
        try await server.shutdown()
    }
}
