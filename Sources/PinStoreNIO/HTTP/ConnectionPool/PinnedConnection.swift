import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import NIOTLS
import PinStore

/// Receives one response from a ``PinnedConnection``. Every call comes on the connection's
/// event loop, in order, and ends with exactly one of ``receiveEnd()`` or ``fail(_:afterResponseBytes:)``.
protocol PinnedResponseReceiver: AnyObject, Sendable {
    func receiveHead(_ head: HTTPResponseHead)
    /// A piece of the (decoded) body. Returns false to stop reading from the socket until
    /// ``PinnedConnection/resumeReading()``: the backpressure of a slow consumer.
    func receiveBodyPart(_ part: ByteBuffer) -> Bool
    func receiveEnd()
    /// `afterResponseBytes`: whether any byte of the response had arrived (no retry then).
    func fail(_ failure: PinnedHTTPFailure, afterResponseBytes: Bool)
}

/// One pinned TLS connection carrying HTTP/1.1 requests one after the other.
///
/// It exists only after the handshake completed, and a handshake completes only after
/// ``PinningTLSVerifier`` allowed the chain: no request byte ever reaches a refused server. The
/// connection keeps the validated chain it was admitted with, so the pool can check it again
/// when the pin list changes.
final class PinnedConnection: Sendable {
    let id: PinnedConnectionPoolStateMachine.ConnectionID
    let key: PinnedConnectionPoolStateMachine.Key
    /// The chain the pin check admitted (DER, leaf first).
    let validatedChain: [Data]
    let channel: any Channel
    private let handler: NIOLoopBound<PinnedConnectionHandler>

    private init(id: Int, key: PinnedConnectionPoolStateMachine.Key, validatedChain: [Data], channel: any Channel,
                 handler: PinnedConnectionHandler) {
        self.id = id
        self.key = key
        self.validatedChain = validatedChain
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
    }

    /// What the pool hears from a connection.
    struct Events: Sendable {
        /// The response ended; `reusable` when keep-alive holds for it.
        var requestFinished: @Sendable (_ reusable: Bool) -> Void
        /// The channel closed.
        var closed: @Sendable () -> Void
    }

    /// Connects to `key`, runs the TLS handshake with the pin check, and succeeds with the
    /// admitted connection; fails with a ``PinnedHTTPFailure``.
    static func connect(id: Int, key: PinnedConnectionPoolStateMachine.Key, verifier: PinningTLSVerifier, context: NIOSSLContext,
                        eventLoop: any EventLoop, timeout: TimeAmount, events: Events) -> EventLoopFuture<PinnedConnection> {
        let decision = Locked<PinningDecision?>(nil)
        let established = eventLoop.makePromise(of: Void.self)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.autoRead, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, serverHostname: key.host) { made in
                        decision.withLock { $0 = made }
                    }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(tls)
                    try pipeline.addHTTPClientHandlers()
                    // Accept-Encoding: deflate, gzip unless the request names its own; the
                    // decoded size is bounded so a compression bomb cannot exhaust memory.
                    try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1_000)))
                    try pipeline.addHandler(PinnedConnectionHandler(established: established, events: events))
                }
            }
        let handshakeTimeout = eventLoop.scheduleTask(in: timeout) {
            established.fail(PinnedHTTPFailure.timedOut)
        }
        let connectHost = key.host.contains(":") ? key.host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) : key.host
        return bootstrap.connect(host: connectHost, port: key.port).flatMap { channel in
            established.futureResult.flatMapError { error in
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }.flatMapThrowing { () -> PinnedConnection in
                guard case .allow(let chain)? = decision.withLock({ $0 }) else {
                    // The handshake cannot complete without an allow; refuse rather than guess.
                    channel.close(promise: nil)
                    throw PinnedHTTPFailure.setup("The TLS handshake completed without a pinning decision.")
                }
                let handler = try channel.pipeline.syncOperations.handler(type: PinnedConnectionHandler.self)
                return PinnedConnection(id: id, key: key, validatedChain: chain, channel: channel, handler: handler)
            }
        }.flatMapErrorThrowing { error in
            throw PinnedHTTPFailure.classify(error, decision: decision.withLock { $0 })
        }.always { _ in
            handshakeTimeout.cancel()
        }
    }

    /// Writes the request and hands the response to `receiver`. `silenceTimeout` ends the
    /// request when nothing arrives for that long.
    func execute(head: HTTPRequestHead, body: ByteBuffer?, silenceTimeout: TimeAmount, receiver: any PinnedResponseReceiver) {
        let handler = self.handler
        channel.eventLoop.execute {
            handler.value.execute(head: head, body: body, silenceTimeout: silenceTimeout, receiver: receiver)
        }
    }

    /// Reading resumes after a receiver paused it.
    func resumeReading() {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.resumeReading() }
    }

    /// Ends the current request (if any) with `failure` and closes the connection.
    func abort(_ failure: PinnedHTTPFailure) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.abort(failure) }
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// The connection's end of the pipeline: signals the handshake, writes one request at a time,
/// forwards the response with backpressure, and tells the pool when it is done or closed.
private final class PinnedConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    private let established: EventLoopPromise<Void>
    private let events: PinnedConnection.Events
    private var context: ChannelHandlerContext?

    private struct Current {
        var receiver: any PinnedResponseReceiver
        var requestAllowsKeepAlive: Bool
        var head: HTTPResponseHead?
        var receivedBytes = false
        var silenceTimeout: TimeAmount
        var timer: Scheduled<Void>?
    }

    private var current: Current?
    private var paused = false
    private var pendingRead = false
    private var closed = false

    init(established: EventLoopPromise<Void>, events: PinnedConnection.Events) {
        self.established = established
        self.events = events
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            // Only now: the handshake cannot complete unless the pinning verifier allowed it.
            established.succeed(())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func execute(head: HTTPRequestHead, body: ByteBuffer?, silenceTimeout: TimeAmount, receiver: any PinnedResponseReceiver) {
        guard let context, !closed, current == nil else {
            receiver.fail(.connectionLost("The connection closed before the request was written."), afterResponseBytes: false)
            // The pool may have leased a connection whose close it has not heard of yet.
            events.closed()
            return
        }
        current = Current(receiver: receiver, requestAllowsKeepAlive: head.isKeepAlive, silenceTimeout: silenceTimeout)
        armTimer()
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard var request = current else {
            // A response nobody asked for: the connection is out of step; drop it.
            context.close(promise: nil)
            return
        }
        request.receivedBytes = true
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Informational answers (100 Continue, 103 Early Hints) precede the real one.
            if (100..<200).contains(head.status.code) { current = request; return }
            request.head = head
            current = request
            armTimer()
            request.receiver.receiveHead(head)
        case .body(let part):
            current = request
            armTimer()
            if !request.receiver.receiveBodyPart(part) {
                paused = true
            }
        case .end:
            guard let head = request.head else {
                finish(with: .badResponse("The response ended without a head."), context: context)
                return
            }
            request.timer?.cancel()
            current = nil
            paused = false
            let reusable = head.isKeepAlive && request.requestAllowsKeepAlive && !closed
            if !reusable { context.close(promise: nil) }
            // The pool first, so that the caller's next request finds the connection idle.
            events.requestFinished(reusable)
            request.receiver.receiveEnd()
            if pendingRead {
                pendingRead = false
                context.read()
            }
        }
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            pendingRead = true
        } else {
            context.read()
        }
    }

    func resumeReading() {
        guard paused else { return }
        paused = false
        if pendingRead, let context {
            pendingRead = false
            context.read()
        }
    }

    func abort(_ failure: PinnedHTTPFailure) {
        guard let context else { return }
        finish(with: failure, context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure: PinnedHTTPFailure
        switch error {
        case let failure as PinnedHTTPFailure: finish(with: failure, context: context); return
        case is HTTPParserError: failure = .badResponse("The response is not valid HTTP/1.1: \(error)")
        case is NIOHTTPDecompression.DecompressionError, is NIOHTTPDecompression.ExtraDecompressionError:
            failure = .badResponse("The response body could not be decoded: \(error)")
        default: failure = PinnedHTTPFailure.classify(error, decision: nil)
        }
        finish(with: failure, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        established.fail(PinnedHTTPFailure.connectionLost("The server closed the connection during the handshake."))
        finish(with: .connectionLost("The server closed the connection before the response was complete."), context: context)
        events.closed()
        context.fireChannelInactive()
    }

    /// Fails the current request (if any) and closes the connection.
    private func finish(with failure: PinnedHTTPFailure, context: ChannelHandlerContext) {
        if let request = current {
            current = nil
            request.timer?.cancel()
            request.receiver.fail(failure, afterResponseBytes: request.receivedBytes)
        }
        context.close(promise: nil)
    }

    private func armTimer() {
        guard let context, var request = current else { return }
        request.timer?.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        request.timer = context.eventLoop.scheduleTask(in: request.silenceTimeout) {
            loopBound.value.abort(.timedOut)
        }
        current = request
    }
}
