import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
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
    /// ``PinnedRequestControl/resumeReading``: the backpressure of a slow consumer.
    func receiveBodyPart(_ part: ByteBuffer) -> Bool
    func receiveEnd()
    /// `afterResponseBytes`: whether any byte of the response had arrived (no retry then).
    func fail(_ failure: PinnedHTTPFailure, afterResponseBytes: Bool)
}

/// Lets the pool steer one running request: resume reading after backpressure, or abort it.
struct PinnedRequestControl: Sendable {
    let resumeReading: @Sendable () -> Void
    let abort: @Sendable (PinnedHTTPFailure) -> Void
}

/// One pinned TLS connection: HTTP/1.1 requests one after the other, or HTTP/2 requests as
/// concurrent streams when the server chose `h2` through ALPN.
///
/// It exists only after the handshake completed, and a handshake completes only after
/// ``PinningTLSVerifier`` allowed the chain: no request byte ever reaches a refused server. The
/// connection keeps the validated chain it was admitted with, so the pool can check it again
/// when the pin list changes.
final class PinnedConnection: Sendable {
    /// Streams an HTTP/2 connection carries at once (swift-nio-http2 holds back streams beyond
    /// the server's own limit until one ends).
    static let http2Capacity = 100

    let id: PinnedConnectionPoolStateMachine.ConnectionID
    let key: PinnedConnectionPoolStateMachine.Key
    /// The chain the pin check admitted (DER, leaf first).
    let validatedChain: [Data]
    let channel: any Channel
    private let protocolKind: Negotiated

    /// What ALPN settled on.
    enum Negotiated: Sendable {
        case http1(NIOLoopBound<PinnedConnectionHandler>)
        case http2(NIOHTTP2Handler.StreamMultiplexer, streamEvents: Events)
    }

    /// Requests it may carry at once.
    var capacity: Int {
        if case .http2 = protocolKind { return Self.http2Capacity }
        return 1
    }

    private init(id: Int, key: PinnedConnectionPoolStateMachine.Key, validatedChain: [Data], channel: any Channel,
                 negotiated: Negotiated) {
        self.id = id
        self.key = key
        self.validatedChain = validatedChain
        self.channel = channel
        self.protocolKind = negotiated
    }

    /// What the pool hears from a connection (or, for HTTP/2, from one stream).
    struct Events: Sendable {
        /// The response ended; `reusable` when keep-alive holds for it.
        var requestFinished: @Sendable (_ reusable: Bool) -> Void
        /// The channel closed.
        var closed: @Sendable () -> Void
    }

    /// Connects to `key`, runs the TLS handshake with the pin check, and succeeds with the
    /// admitted connection; fails with a ``PinnedHTTPFailure``. `streamEnded` is called when an
    /// HTTP/2 stream has closed (its slot is free again).
    static func connect(id: Int, key: PinnedConnectionPoolStateMachine.Key, verifier: PinningTLSVerifier, context: NIOSSLContext,
                        eventLoop: any EventLoop, timeout: TimeAmount, events: Events,
                        streamEnded: @escaping @Sendable () -> Void) -> EventLoopFuture<PinnedConnection> {
        let decision = Locked<PinningDecision?>(nil)
        let established = eventLoop.makePromise(of: Negotiated.self)
        let streamEvents = Events(requestFinished: { _ in }, closed: streamEnded)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, serverHostname: key.host, port: key.port) { made in
                        decision.withLock { $0 = made }
                    }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(tls)
                    let watcher = EstablishmentWatcher(established: established, events: events)
                    // Runs once the handshake (and with it the pin check) completed: the protocol
                    // the server chose decides the rest of the pipeline.
                    let negotiation = ApplicationProtocolNegotiationHandler { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            let pipeline = channel.pipeline.syncOperations
                            if case .negotiated("h2") = result {
                                let multiplexer = try pipeline.configureHTTP2Pipeline(
                                    mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                                ) { pushed in
                                    // No server push: a pushed stream is closed unread.
                                    pushed.close()
                                }
                                try pipeline.handler(type: EstablishmentWatcher.self).carriesHTTP2 = true
                                established.succeed(.http2(multiplexer, streamEvents: streamEvents))
                            } else {
                                try pipeline.addHTTPClientHandlers()
                                // Accept-Encoding: deflate, gzip unless the request names its own;
                                // the decoded size is bounded so a compression bomb cannot exhaust memory.
                                try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1_000)))
                                let handler = PinnedConnectionHandler(events: events)
                                try pipeline.addHandler(handler)
                                established.succeed(.http1(NIOLoopBound(handler, eventLoop: channel.eventLoop)))
                            }
                        }
                    }
                    try pipeline.addHandler(negotiation)
                    try pipeline.addHandler(watcher)
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
            }.flatMapThrowing { negotiated -> PinnedConnection in
                // Allowed, or a report-only failure: the connection goes on with the validated chain.
                guard let chain = decision.withLock({ $0 })?.validatedChain else {
                    // The handshake cannot complete without an allow; refuse rather than guess.
                    channel.close(promise: nil)
                    throw PinnedHTTPFailure.setup("The TLS handshake completed without a pinning decision.")
                }
                return PinnedConnection(id: id, key: key, validatedChain: chain, channel: channel, negotiated: negotiated)
            }
        }.flatMapErrorThrowing { error in
            let made = decision.withLock { $0 }
            // A handshake the TLS stack refused before any certificate was seen (no TLS version
            // or suite in common under the host's ATS minimums): name the requirement.
            if made == nil, let failure = verifier.transportSecurityFailure(for: error, serverHostname: key.host) {
                verifier.evaluator.store.record(.deny(failure), host: key.host)
                throw PinnedHTTPFailure.pinning(failure)
            }
            throw PinnedHTTPFailure.classify(error, decision: made)
        }.always { _ in
            handshakeTimeout.cancel()
        }
    }

    /// Writes the request and hands the response to `receiver`; `onControl` gets the handle to
    /// steer it (at once for HTTP/1.1, once its stream exists for HTTP/2). `silenceTimeout`
    /// ends the request when nothing arrives for that long.
    func execute(head: HTTPRequestHead, body: ByteBuffer?, silenceTimeout: TimeAmount, receiver: any PinnedResponseReceiver,
                 onControl: @escaping @Sendable (PinnedRequestControl) -> Void) {
        switch protocolKind {
        case .http1(let handler):
            onControl(Self.control(handler, receiver: receiver))
            channel.eventLoop.execute {
                handler.value.execute(head: head, body: body, silenceTimeout: silenceTimeout, receiver: receiver)
            }
        case .http2(let multiplexer, let streamEvents):
            let created = channel.eventLoop.makePromise(of: (any Channel).self)
            multiplexer.createStreamChannel(promise: created) { stream in
                stream.eventLoop.makeCompletedFuture {
                    let pipeline = stream.pipeline.syncOperations
                    try pipeline.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                    try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1_000)))
                    try pipeline.addHandler(PinnedConnectionHandler(events: streamEvents))
                }
            }
            created.futureResult.whenComplete { result in
                switch result {
                case .success(let stream):
                    do {
                        let handler = NIOLoopBound(try stream.pipeline.syncOperations.handler(type: PinnedConnectionHandler.self),
                                                   eventLoop: stream.eventLoop)
                        onControl(Self.control(handler, receiver: receiver))
                        handler.value.execute(head: head, body: body, silenceTimeout: silenceTimeout, receiver: receiver)
                    } catch {
                        stream.close(promise: nil)
                        receiver.fail(.connectionLost("The HTTP/2 stream could not be set up: \(error)"), afterResponseBytes: false)
                    }
                case .failure(let error):
                    receiver.fail(.connectionLost("No HTTP/2 stream could be opened: \(error)"), afterResponseBytes: false)
                    streamEvents.closed()
                }
            }
        }
    }

    private static func control(_ handler: NIOLoopBound<PinnedConnectionHandler>, receiver: any PinnedResponseReceiver) -> PinnedRequestControl {
        PinnedRequestControl(
            resumeReading: { handler.eventLoop.execute { handler.value.resumeReading() } },
            // Weak: the request holds its control (no cycle); a request gone has nothing to abort.
            abort: { [weak receiver] failure in
                guard let receiver else { return }
                handler.eventLoop.execute { handler.value.abort(failure, ifServing: receiver) }
            })
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// Sits behind the TLS handler from the start: fails the connection attempt when the channel
/// errs or closes before a protocol was settled, and reports the close of an HTTP/2 connection
/// (an HTTP/1.1 connection's own handler reports that).
private final class EstablishmentWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let established: EventLoopPromise<PinnedConnection.Negotiated>
    private let events: PinnedConnection.Events
    var carriesHTTP2 = false

    init(established: EventLoopPromise<PinnedConnection.Negotiated>, events: PinnedConnection.Events) {
        self.established = established
        self.events = events
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        established.fail(error)
        if carriesHTTP2 { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        established.fail(PinnedHTTPFailure.connectionLost("The server closed the connection during the handshake."))
        if carriesHTTP2 { events.closed() }
        context.fireChannelInactive()
    }
}

/// The end of an HTTP/1.1 connection's pipeline, or of one HTTP/2 stream's: writes one request
/// at a time, forwards the response with backpressure, and tells the pool when it is done or
/// closed.
final class PinnedConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

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

    init(events: PinnedConnection.Events) {
        self.events = events
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
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

    /// Ends the current request with `failure` and closes the connection. With `receiver`, only
    /// while that request is the current one: a late cancellation of a request that already
    /// ended must not close the connection under the next one.
    func abort(_ failure: PinnedHTTPFailure, ifServing receiver: (any PinnedResponseReceiver)? = nil) {
        guard let context else { return }
        if let receiver, current?.receiver !== receiver { return }
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
