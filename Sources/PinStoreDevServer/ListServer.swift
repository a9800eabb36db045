import Foundation
import PinStore
import NIOCore
import NIOPosix
import NIOHTTP1
import NIOSSL

/// A small HTTP/1.1 server on 127.0.0.1 for development, tests and the demo: it serves
/// fingerprint lists (see ``ListResponders``) or anything else a responder computes, over
/// plain http or, with a ``ListServerTLS``, https.
///
/// It only ever listens on the IPv4 loopback address, so it is never reachable from another
/// machine. Each server owns one event-loop thread; call ``shutdown()`` when done.
///
/// ```swift
/// let server = try await ListServer.start(responder: ListResponders.staticList(listJSON))
/// defer { Task { try? await server.shutdown() } }
/// let url = server.baseURL.appendingPathComponent("list.json")   // http://127.0.0.1:PORT/list.json
/// ```
package final class ListServer: Sendable {
    /// The address the server binds: loopback only, by design.
    package static let host = "127.0.0.1"

    /// The TCP port the server listens on (the ephemeral one chosen when started with port 0).
    package let port: Int
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    package let baseURL: URL

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let state: Locked<ListServerState>

    private init(port: Int, baseURL: URL, group: MultiThreadedEventLoopGroup, channel: any Channel, state: Locked<ListServerState>) {
        self.port = port
        self.baseURL = baseURL
        self.group = group
        self.channel = channel
        self.state = state
    }

    /// Starts listening on 127.0.0.1:`port` (0 picks a free ephemeral port) and answers every
    /// request with `responder`.
    package static func start(port: Int = 0, tls: ListServerTLS? = nil, responder: @escaping ListServerResponder) async throws -> ListServer {
        guard (0...65_535).contains(port) else {
            throw ListServerError("port \(port) is not a TCP port (0 picks a free one)")
        }
        let sslContext = try tls?.makeContext()
        let state = Locked(ListServerState())
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(ListServerHandler(responder: responder, state: state))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw ListServerError("cannot listen on \(host):\(port): \(error)")
        }
        let scheme = tls == nil ? "http" : "https"
        guard let boundPort = channel.localAddress?.port,
              let baseURL = URL(string: "\(scheme)://\(host):\(boundPort)") else {
            try? await channel.close()
            try? await group.shutdownGracefully()
            throw ListServerError("the server socket has no local port")
        }
        return ListServer(port: boundPort, baseURL: baseURL, group: group, channel: channel, state: state)
    }

    /// The number of requests received so far (counted when a request's head arrives).
    package var requestCount: Int {
        state.withLock { $0.requests }
    }

    /// Requests received whose response has not been written to its end, on connections still
    /// open: the requests a client holds open now.
    package var openRequests: Int {
        state.withLock { $0.open }
    }

    /// The most ``openRequests`` there ever were at once.
    package var maximumOpenRequests: Int {
        state.withLock { $0.maximumOpen }
    }

    /// Requests whose connection the client closed before their response was written to its
    /// end (a client that gave up on a slow or dripping answer).
    package var abandonedRequests: Int {
        state.withLock { $0.abandoned }
    }

    /// Stops listening, closes open connections and ends the server's thread. Calling it twice
    /// is harmless.
    package func shutdown() async throws {
        // NIO's group shutdown must run once: a second `shutdownGracefully` never completes.
        guard state.withLock({ state -> Bool in
            defer { state.shutDown = true }
            return !state.shutDown
        }) else { return }
        try? await channel.close()
        try await group.shutdownGracefully()
    }

    /// Waits until the server has been shut down (for `pinstore serve`).
    package func waitUntilClosed() async throws {
        try await channel.closeFuture.get()
    }
}

/// The server's mutable state, shared by every connection.
struct ListServerState: Sendable {
    /// Requests received so far.
    var requests = 0
    /// Requests whose response is not written to its end, on open connections.
    var open = 0
    /// The most `open` ever was.
    var maximumOpen = 0
    /// Requests whose connection closed before their response ended.
    var abandoned = 0
    /// Whether shutdown has begun.
    var shutDown = false
}
