import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import PinStore

/// Where a publisher hears the stores' pin-failure reports (`reportEndpoint` in the publication
/// file): plain HTTP/1.1, `POST` of one ``PinFailureReport`` per request, any path. Each report
/// only makes the partner it names due for a probe (``Publisher/receiveReport(_:)``).
///
/// Bounded: a body over 64 KiB is answered 413 and the connection closed at once, at most 256
/// connections are open at once (more are closed at once), a connection idle for 10 seconds is
/// closed, and any connection is closed 30 seconds after it opened, however it trickles (one
/// byte every few seconds would reset an idle timeout for ever). The
/// answer says nothing about the partners: 202 for any report, 400 for what is not one. Put it
/// behind the same network boundary as the fleet (or a proxy adding TLS): what it receives can
/// cost probes, never pins.
final class PublisherReportEndpoint: Sendable {
    static let maximumConnections = 256
    static let idleTimeout = TimeAmount.seconds(10)
    static let connectionLifetime = TimeAmount.seconds(30)

    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    /// The port bound (the one asked for, or the ephemeral one for port 0).
    let port: Int

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, port: Int) {
        self.group = group
        self.channel = channel
        self.port = port
    }

    /// Listens on `host`:`port` and hands each report to `publisher`.
    static func start(host: String, port: Int, publisher: Publisher, logger: Logger) async throws(PublisherError) -> PublisherReportEndpoint {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let connections = Locked(0)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let admitted = connections.withLock { count -> Bool in
                    guard count < maximumConnections else { return false }
                    count += 1
                    return true
                }
                guard admitted else { return channel.close() }
                channel.closeFuture.whenComplete { _ in connections.withLock { $0 -= 1 } }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(allTimeout: idleTimeout))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(ReportHandler(publisher: publisher))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: host, port: port).get()
            return PublisherReportEndpoint(group: group, channel: channel, port: channel.localAddress?.port ?? port)
        } catch {
            try? await group.shutdownGracefully()
            throw PublisherError(.invalidPublicationFile, "reportEndpoint \(host):\(port) cannot be listened on: \(error)")
        }
    }

    func shutdown() async throws {
        try? await channel.close()
        try await group.shutdownGracefully()
    }
}

/// One connection's requests: a bounded body, then the publisher's receipt as a status.
private final class ReportHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let publisher: Publisher
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var tooLarge = false

    init(publisher: Publisher) {
        self.publisher = publisher
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.eventLoop.scheduleTask(in: PublisherReportEndpoint.connectionLifetime) { channel.close(promise: nil) }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body.clear()
            tooLarge = false
        case .body(var buffer):
            guard !tooLarge else { return }
            if body.readableBytes + buffer.readableBytes > Publisher.maximumReportSize {
                // Answered and closed now, not after reading whatever else the client sends.
                tooLarge = true
                body.clear()
                respond(.payloadTooLarge, "a report is at most \(Publisher.maximumReportSize) bytes\n", keepAlive: false, context: context)
            } else {
                body.writeBuffer(&buffer)
            }
        case .end:
            guard let requestHead = head else { return }
            head = nil
            guard requestHead.method == .POST else {
                respond(.methodNotAllowed, "POST pin-failure reports here\n", keepAlive: requestHead.isKeepAlive, context: context)
                return
            }
            guard !tooLarge else { return }
            let data = Data(body.readableBytesView)
            body.clear()
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let publisher = self.publisher
            let keepAlive = requestHead.isKeepAlive
            Task {
                let receipt = await publisher.receiveReport(data)
                bound.eventLoop.execute {
                    let (handler, context) = bound.value
                    if receipt == .unreadable {
                        handler.respond(.badRequest, "not a pin-failure report\n", keepAlive: keepAlive, context: context)
                    } else {
                        handler.respond(.accepted, "", keepAlive: keepAlive, context: context)
                    }
                }
            }
        }
    }

    private func respond(_ status: HTTPResponseStatus, _ text: String, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(text.utf8.count)")])
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
