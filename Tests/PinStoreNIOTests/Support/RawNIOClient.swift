import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import PinStore
import PinStoreNIO
import PinStoreTestSupport

/// A plain SwiftNIO HTTPS client, as an app would write one, pinned by `PinningTLSVerifier`.
enum RawNIOClient {
    struct Response: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: String
        /// What swift-nio-ssl kept from the verification callback.
        var validatedChain: ValidatedCertificateChain?
    }

    struct Outcome: Sendable {
        var result: Result<Response, any Error>
        /// The verifier's decision, reported through `onDecision`.
        var decision: PinningDecision?
    }

    /// GET `path` from `host`:`port` (connecting to 127.0.0.1) through a handler made by `verifier`.
    static func get(_ path: String, host: String = "localhost", port: Int, verifier: PinningTLSVerifier,
                    context: NIOSSLContext? = nil) async throws -> Outcome {
        let context = try context ?? NIOSSLContext(configuration: .makeClientConfiguration())
        let decision = Locked<PinningDecision?>(nil)
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let promise = eventLoop.makePromise(of: Response.self)
        let connect = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(Int64(HangGuard.seconds)))  // a hang guard: loopback, on busy event loops
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, serverHostname: host) { made in
                        decision.withLock { $0 = made }
                    }
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(GetHandler(host: host, path: path, tls: tls, promise: promise))
                }
            }
            .connect(host: "127.0.0.1", port: port)
        connect.whenFailure { promise.fail($0) }
        let result: Result<Response, any Error>
        do {
            result = .success(try await promise.futureResult.get())
        } catch {
            result = .failure(error)
        }
        if let channel = try? await connect.get() { try? await channel.close() }
        return Outcome(result: result, decision: decision.withLock { $0 })
    }
}

/// Sends one GET after the handshake and collects the answer.
private final class GetHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let path: String
    private let tls: NIOSSLClientHandler
    private let promise: EventLoopPromise<RawNIOClient.Response>
    private var head: HTTPResponseHead?
    private var body = ""

    init(host: String, path: String, tls: NIOSSLClientHandler, promise: EventLoopPromise<RawNIOClient.Response>) {
        self.host = host
        self.path = path
        self.tls = tls
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: host)
            headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body(let chunk): body += String(buffer: chunk)
        case .end:
            guard let head else { return }
            promise.succeed(.init(status: Int(head.status.code), headers: head.headers, body: body,
                                  validatedChain: tls.peerValidatedCertificateChain))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
