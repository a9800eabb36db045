import Foundation
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
    private let counter: RequestCounter

    private init(port: Int, baseURL: URL, group: MultiThreadedEventLoopGroup, channel: any Channel, counter: RequestCounter) {
        self.port = port
        self.baseURL = baseURL
        self.group = group
        self.channel = channel
        self.counter = counter
    }

    /// Starts listening on 127.0.0.1:`port` (0 picks a free ephemeral port) and answers every
    /// request with `responder`.
    package static func start(port: Int = 0, tls: ListServerTLS? = nil, responder: @escaping ListServerResponder) async throws -> ListServer {
        guard (0...65_535).contains(port) else {
            throw ListServerError("port \(port) is not a TCP port (0 picks a free one)")
        }
        let sslContext = try tls?.makeContext()
        let counter = RequestCounter()
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
                    try pipeline.addHandler(ListServerHandler(responder: responder, counter: counter))
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
        return ListServer(port: boundPort, baseURL: baseURL, group: group, channel: channel, counter: counter)
    }

    /// The number of requests received so far (counted when a request's head arrives).
    package var requestCount: Int {
        counter.value
    }

    /// Stops listening, closes open connections and ends the server's thread. Calling it twice
    /// is harmless.
    package func shutdown() async throws {
        try? await channel.close()
        do {
            try await group.shutdownGracefully()
        } catch EventLoopError.shutdown {
            // Already shut down by an earlier call.
        }
    }

    /// Waits until the server has been shut down (for `pinstore serve`).
    package func waitUntilClosed() async throws {
        try await channel.closeFuture.get()
    }
}

/// A thread-safe request counter shared by every connection of one server.
final class RequestCounter: Sendable {
    private let count = NIOLockedCount()

    var value: Int { count.value }

    func increment() { count.increment() }
}

/// An `Int` behind a lock.
private final class NIOLockedCount: @unchecked Sendable {
    // @unchecked: `storage` is only touched while `lock` is held.
    private let lock = NSLock()
    private var storage = 0

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }

    func increment() {
        lock.lock()
        storage += 1
        lock.unlock()
    }
}
