import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import PinStore
import PinStoreTestSupport

/// An HTTPS server on 127.0.0.1 (port 0) presenting fixture certificates, speaking HTTP/1.1 or,
/// with `http2`, HTTP/2 when the client offers it in ALPN. It counts what a pinning test needs
/// to see from the server's side: TCP connections, decrypted bytes before HTTP parsing, and
/// requests.
///
/// `/hello` answers `hello over a pinned connection`; anything else 404.
final class LoopbackHTTPSServer: Sendable {
    /// The port the server listens on.
    let port: Int
    private let channel: any Channel
    private let counters: Counters

    final class Counters: Sendable {
        let connections = Locked(0)
        let closedConnections = Locked(0)
        let receivedBytes = Locked(0)
        let requests = Locked<[String]>([])
        let children = Locked<[any Channel]>([])
    }

    /// TCP connections accepted so far.
    var connections: Int { counters.connections.withLock { $0 } }
    /// Connections that have closed so far.
    var closedConnections: Int { counters.closedConnections.withLock { $0 } }
    /// Decrypted bytes that reached the HTTP layer (for HTTP/2 this includes the client preface
    /// and SETTINGS, which carry no request).
    var receivedBytes: Int { counters.receivedBytes.withLock { $0 } }
    /// Requests received (method and path), in arrival order.
    var requests: [String] { counters.requests.withLock { $0 } }

    /// `https://localhost:PORT`.
    var baseURL: String { "https://localhost:\(port)" }

    private init(port: Int, channel: any Channel, counters: Counters) {
        self.port = port
        self.channel = channel
        self.counters = counters
    }

    /// Starts a server presenting `chain` (PEM fixtures, leaf first) with `key`.
    /// `configure` changes the server's TLS configuration (protocol versions, cipher suites).
    static func start(chain: [String], key: String, http2: Bool = false,
                      configure: (inout TLSConfiguration) -> Void = { _ in }) async throws -> LoopbackHTTPSServer {
        let certificates = try chain.flatMap { try NIOSSLCertificate.fromPEMFile(TestResources.fixturePath($0)) }
        let privateKey = try NIOSSLPrivateKey(file: TestResources.fixturePath(key), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        configure(&configuration)
        let context = try NIOSSLContext(configuration: configuration)
        let counters = Counters()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                counters.connections.withLock { $0 += 1 }
                counters.children.withLock { $0.append(child) }
                child.closeFuture.whenComplete { _ in counters.closedConnections.withLock { $0 += 1 } }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try child.pipeline.syncOperations.addHandler(ByteCounter(count: counters.receivedBytes))
                }.flatMap {
                    child.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { connection in
                            connection.configureHTTP2Pipeline(mode: .server, inboundStreamInitializer: { stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                    try stream.pipeline.syncOperations.addHandler(Responder(requests: counters.requests))
                                }
                            }).map { _ in }
                        },
                        http1ChannelConfigurator: { connection in
                            connection.eventLoop.makeCompletedFuture {
                                try connection.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                                try connection.pipeline.syncOperations.addHandler(Responder(requests: counters.requests))
                            }
                        })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw ServerError.noPort }
        return LoopbackHTTPSServer(port: port, channel: channel, counters: counters)
    }

    /// Stops listening and closes every connection.
    func shutdown() async {
        for child in counters.children.withLock({ $0 }) {
            try? await child.close()
        }
        try? await channel.close()
    }

    enum ServerError: Error { case noPort }
}

/// Answers `/hello`, 404 otherwise, and records each request head.
private final class Responder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let helloBody = "hello over a pinned connection"
    private let requests: Locked<[String]>
    private var head: HTTPRequestHead?

    init(requests: Locked<[String]>) { self.requests = requests }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            requests.withLock { $0.append("\(head.method.rawValue) \(head.uri)") }
        case .body:
            break
        case .end:
            guard let head else { return }
            let found = head.uri == "/hello"
            let text = found ? Self.helloBody : "not found"
            var headers = HTTPHeaders([("Content-Type", "text/plain")])
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: found ? .ok : .notFound, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }
}

/// Counts the decrypted bytes on their way to the HTTP layer.
private final class ByteCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let count: Locked<Int>
    init(count: Locked<Int>) { self.count = count }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data).readableBytes
        count.withLock { $0 += bytes }
        context.fireChannelRead(data)
    }
}
