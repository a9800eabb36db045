import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import PinStore

/// One HTTP/1.1 request and its response over a fresh pinned TLS connection.
///
/// The request is written only after swift-nio-ssl reports a completed handshake, and a
/// handshake completes only after ``PinningTLSVerifier`` allowed the chain: a refused server
/// never receives a request byte. One connection per request (`Connection: close`): no pool
/// means no connection can be reused for a host it was not checked for.
final class PinnedHTTPExchange: Sendable {
    struct Request: Sendable {
        var host: String
        var port: Int
        var head: HTTPRequestHead
        var body: Data?
        var timeout: TimeAmount
    }

    struct Response: Sendable {
        var head: HTTPResponseHead
        var body: Data
    }

    enum Failure: Error, Sendable {
        case pinning(PinningFailure)
        case timedOut
        case cancelled
        case cannotConnect(String)
        case tls(String)
        case connectionLost(String)
        case setup(String)
    }

    private struct State {
        var channel: (any Channel)?
        var cancelled = false
        var decision: PinningDecision?
    }

    private let state = Locked(State())

    private init() {}

    /// Runs `request`; `completion` is called exactly once.
    static func run(_ request: Request, verifier: PinningTLSVerifier, context: NIOSSLContext, group: any EventLoopGroup,
                    completion: @escaping @Sendable (Result<Response, Failure>) -> Void) -> PinnedHTTPExchange {
        let exchange = PinnedHTTPExchange()
        let eventLoop = group.next()
        let responsePromise = eventLoop.makePromise(of: Response.self)
        responsePromise.futureResult.whenComplete { result in
            completion(result.mapError { exchange.classify($0) })
        }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(request.timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, serverHostname: request.host) { decision in
                        exchange.state.withLock { $0.decision = decision }
                    }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(tls)
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(IdleStateHandler(allTimeout: request.timeout))
                    try pipeline.addHandler(ExchangeHandler(request: request, promise: responsePromise))
                }
            }
        let connectHost = request.host.hasPrefix("[") ? String(request.host.dropFirst().dropLast()) : request.host
        bootstrap.connect(host: connectHost, port: request.port).whenComplete { result in
            switch result {
            case .success(let channel):
                let cancelled = exchange.state.withLock { state in
                    state.channel = channel
                    return state.cancelled
                }
                if cancelled { channel.close(promise: nil) }
            case .failure(let error):
                responsePromise.fail(error)
            }
        }
        return exchange
    }

    /// Ends the exchange; its completion reports ``Failure/cancelled`` unless it already finished.
    func cancel() {
        let channel = state.withLock { state in
            state.cancelled = true
            return state.channel
        }
        channel?.close(promise: nil)
    }

    /// What went wrong, in the terms a caller can act on. A recorded denial wins over whatever
    /// error swift-nio-ssl surfaced for the failed handshake.
    private func classify(_ error: any Error) -> Failure {
        let (decision, cancelled) = state.withLock { ($0.decision, $0.cancelled) }
        if case .deny(let failure)? = decision { return .pinning(failure) }
        if cancelled { return .cancelled }
        switch error {
        case let failure as Failure:
            return failure
        case ChannelError.connectTimeout:
            return .timedOut
        case let error as NIOSSLError:
            return .tls(String(describing: error))
        case let error as PinningTLSSetupError:
            return .setup(error.description)
        case is NIOConnectionError, is IOError:
            return .cannotConnect(String(describing: error))
        default:
            return .connectionLost(String(describing: error))
        }
    }
}

/// Sends the request once TLS is up, gathers the response, and completes the promise.
private final class ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let request: PinnedHTTPExchange.Request
    private let promise: EventLoopPromise<PinnedHTTPExchange.Response>
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private var finished = false

    init(request: PinnedHTTPExchange.Request, promise: EventLoopPromise<PinnedHTTPExchange.Response>) {
        self.request = request
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            // Only now: the handshake cannot complete unless the pinning verifier allowed it.
            context.write(wrapOutboundOut(.head(request.head)), promise: nil)
            if let data = request.body, !data.isEmpty {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: data)))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else if event is IdleStateHandler.IdleStateEvent {
            fail(PinnedHTTPExchange.Failure.timedOut, context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let responseHead):
            // Informational answers (100 Continue, 103 Early Hints) precede the real one.
            if (100..<200).contains(responseHead.status.code) { return }
            head = responseHead
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard !finished, let head else { return }
            finished = true
            promise.succeed(.init(head: head, body: Data(body.readableBytesView)))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(PinnedHTTPExchange.Failure.connectionLost("The server closed the connection before the response was complete."), context: context)
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard !finished else { return }
        finished = true
        promise.fail(error)
        context.close(promise: nil)
    }
}
