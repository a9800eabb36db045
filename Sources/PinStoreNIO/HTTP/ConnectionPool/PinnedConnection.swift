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
/// connection keeps what it was admitted with (the `ValidatedChain` its trust evaluation made
/// and the host it was made for), so the pool can check it again when the pin list changes.
final class PinnedConnection: Sendable {
    /// Streams an HTTP/2 connection carries at once (swift-nio-http2 holds back streams beyond
    /// the server's own limit until one ends).
    static let http2Capacity = 100

    let id: PinnedConnectionPoolStateMachine.ConnectionID
    let key: PinnedConnectionPoolStateMachine.Key
    /// What the pin check admitted: the chain the trust evaluation validated, for `key.host`.
    let admission: AdmissionGate.Evidence
    let channel: any Channel
    private let protocolKind: Negotiated

    /// What ALPN settled on.
    enum Negotiated: Sendable {
        case http1(NIOLoopBound<PinnedConnectionHandler>)
        case http2(NIOHTTP2Handler.StreamMultiplexer, NIOLoopBound<HTTP2ConnectionGuard>, streamEvents: Events)
    }

    /// swift-nio-http2's connection settings and DoS limits, set deliberately rather than left
    /// to its defaults (which are the same where not said otherwise):
    /// - `SETTINGS_ENABLE_PUSH = 0` (not in swift-nio-http2's default settings): a PUSH_PROMISE
    ///   is then a connection error (`PushInViolationOfSetting`) instead of a stream we close.
    /// - `SETTINGS_MAX_HEADER_LIST_SIZE` 64 KiB (default 16 KiB), the same bound as HTTP/1.1
    ///   heads: a larger header block fails with `ExcessivelyLargeHeaderBlock` while it is being
    ///   received, before it is decoded.
    /// - At most 5 CONTINUATION frames in a row (`ExcessiveContinuationFrames`): a header block
    ///   that never ends is cut after its sixth frame.
    /// - At most 200 inbound PING, SETTINGS, PRIORITY, ALTSVC or ORIGIN frames per 30 s
    ///   (`ExcessiveControlFrames`): a PING or SETTINGS flood ends the connection after 200.
    /// - At most 1,000 control frames (PING and SETTINGS acknowledgements, RST_STREAM) waiting to
    ///   be written while the socket is not writable (default 10,000;
    ///   `ExcessiveOutboundFrameBuffering`): a server that sends but does not read cannot make
    ///   the client hoard answers. A server that reads never lets more than a few wait.
    /// - At most 200 glitches (suspicious events such as stream errors) per connection.
    static let http2Connection: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .maxHeaderListSize, value: PinnedTransportLimits.maximumResponseHeadSize),
            HTTP2Setting(parameter: .enablePush, value: 0),
        ]
        configuration.maximumSequentialContinuationFrames = 5
        configuration.controlFrameRateLimit.maximumCount = 200
        configuration.controlFrameRateLimit.windowLength = .seconds(30)
        configuration.maximumBufferedControlFrames = 1_000
        configuration.maximumConnectionGlitches = 200
        return configuration
    }()

    /// NIOHTTP1's decoder limits (its defaults are 80 KiB): one header field, and all of them
    /// together, at most ``PinnedTransportLimits/maximumResponseHeadSize``.
    /// ``ResponsePreambleLimiter`` bounds what these do not cover: the status line and the
    /// informational responses before the final one.
    static let http1DecoderLimits: NIOHTTPDecoderLimitConfiguration = {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = PinnedTransportLimits.maximumResponseHeadSize
        limits.maxHeaderListSize = PinnedTransportLimits.maximumResponseHeadSize
        return limits
    }()

    /// Requests it may carry at once.
    var capacity: Int {
        if case .http2 = protocolKind { return Self.http2Capacity }
        return 1
    }

    private init(id: Int, key: PinnedConnectionPoolStateMachine.Key, admission: AdmissionGate.Evidence, channel: any Channel,
                 negotiated: Negotiated) {
        self.id = id
        self.key = key
        self.admission = admission
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
        let decision = Locked<(made: PinningDecision, admission: AdmissionGate.Evidence?)?>(nil)
        let established = eventLoop.makePromise(of: Negotiated.self)
        let streamEvents = Events(requestFinished: { _ in }, closed: streamEnded)
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try verifier.makeClientHandler(context: context, host: key.host, port: key.port) { made, admission in
                        decision.withLock { $0 = (made, admission) }
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
                                    mode: .client, connectionConfiguration: Self.http2Connection, streamConfiguration: .init()
                                ) { pushed in
                                    // Never reached: push is disabled (SETTINGS_ENABLE_PUSH = 0), so
                                    // swift-nio-http2 refuses a PUSH_PROMISE as a connection error.
                                    pushed.close()
                                }
                                let connectionGuard = HTTP2ConnectionGuard()
                                try pipeline.addHandler(connectionGuard)
                                try pipeline.handler(type: EstablishmentWatcher.self).carriesHTTP2 = true
                                established.succeed(.http2(multiplexer, NIOLoopBound(connectionGuard, eventLoop: channel.eventLoop),
                                                           streamEvents: streamEvents))
                            } else {
                                let preamble = ResponsePreambleLimiter()
                                // addHTTPClientHandlers' three handlers, with the response decoder
                                // forwarding informational (1xx) responses so they can be counted,
                                // and our limiter in front of it (see ResponsePreambleLimiter).
                                try pipeline.addHandler(HTTPRequestEncoder())
                                try pipeline.addHandler(preamble)
                                try pipeline.addHandler(ByteToMessageHandler(HTTPResponseDecoder(
                                    leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward,
                                    limitConfiguration: Self.http1DecoderLimits)))
                                // No NIOHTTPRequestHeadersValidator: the transport checks the head
                                // as it builds it (RequestHeadRules), for HTTP/2 streams too.
                                // Accept-Encoding: deflate, gzip unless the request names its own;
                                // the decoded size is bounded so a compression bomb cannot exhaust memory.
                                try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1_000)))
                                let handler = PinnedConnectionHandler(events: events, preamble: preamble)
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
        return bootstrap.connect(host: key.host.text, port: key.port).flatMap { channel in
            established.futureResult.flatMapError { error in
                channel.close(promise: nil)
                return channel.eventLoop.makeFailedFuture(error)
            }.flatMapThrowing { negotiated -> PinnedConnection in
                // Allowed, or a report-only failure: the connection goes on with the validated chain.
                guard let admission = decision.withLock({ $0 })?.admission else {
                    // The handshake cannot complete without an allow; refuse rather than guess.
                    channel.close(promise: nil)
                    throw PinnedHTTPFailure.setup("The TLS handshake completed without a pinning decision.")
                }
                return PinnedConnection(id: id, key: key, admission: admission, channel: channel, negotiated: negotiated)
            }
        }.flatMapErrorThrowing { error in
            let made = decision.withLock { $0 }?.made
            // A handshake the TLS stack refused before any certificate was seen (no TLS version
            // or suite in common under the host's ATS minimums): name the requirement.
            if made == nil, let failure = verifier.transportSecurityFailure(for: error, serverHostname: key.host.text) {
                verifier.evaluator.store.record(.deny(failure), host: key.host.text)
                throw PinnedHTTPFailure.pinning(failure)
            }
            throw PinnedHTTPFailure.classify(error, decision: made)
        }.always { _ in
            handshakeTimeout.cancel()
        }
    }

    /// Writes the request and hands the response to `receiver`; `onControl` gets the handle to
    /// steer it (at once for HTTP/1.1, once its stream exists for HTTP/2). `silenceTimeout`
    /// ends the request when nothing arrives for that long. `gate` is asked right before the
    /// first byte, on the event loop: the lease was made earlier, and the list may have changed.
    func execute(head: HTTPRequestHead, body: ByteBuffer?, silenceTimeout: TimeAmount, receiver: any PinnedResponseReceiver,
                 gate: PinnedConnectionPool.WriteGate, onControl: @escaping @Sendable (PinnedRequestControl) -> Void) {
        switch protocolKind {
        case .http1(let handler):
            // The write is queued on the event loop before the control is handed over: a
            // cancellation that arrives meanwhile queues its abort behind the write, where it
            // finds the request running (queued ahead, it found nothing and was lost).
            channel.eventLoop.execute {
                handler.value.execute(head: head, body: body, silenceTimeout: silenceTimeout, receiver: receiver, gate: gate)
            }
            onControl(Self.control(handler, receiver: receiver))
        case .http2(let multiplexer, let connectionGuard, let streamEvents):
            let created = channel.eventLoop.makePromise(of: (any Channel).self)
            multiplexer.createStreamChannel(promise: created) { stream in
                stream.eventLoop.makeCompletedFuture {
                    // A connection that failed takes no new stream (its close may still be under way).
                    if let failure = connectionGuard.value.failure { throw failure }
                    let pipeline = stream.pipeline.syncOperations
                    try pipeline.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                    try pipeline.addHandler(NIOHTTPResponseDecompressor(limit: .ratio(1_000)))
                    let handler = PinnedConnectionHandler(events: streamEvents)
                    try pipeline.addHandler(handler)
                    connectionGuard.value.register(handler)
                }
            }
            created.futureResult.whenComplete { result in
                switch result {
                case .success(let stream):
                    do {
                        let handler = NIOLoopBound(try stream.pipeline.syncOperations.handler(type: PinnedConnectionHandler.self),
                                                   eventLoop: stream.eventLoop)
                        onControl(Self.control(handler, receiver: receiver))
                        handler.value.execute(head: head, body: body, silenceTimeout: silenceTimeout, receiver: receiver, gate: gate)
                    } catch {
                        stream.close(promise: nil)
                        receiver.fail(.connectionLost("The HTTP/2 stream could not be set up: \(error)"), afterResponseBytes: false)
                    }
                case .failure(let error as PinnedHTTPFailure):
                    receiver.fail(error, afterResponseBytes: false)
                    streamEvents.closed()
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
    /// HTTP/1.1: the byte count of the response preamble, ended by the final head.
    private let preamble: ResponsePreambleLimiter?
    private var context: ChannelHandlerContext?

    private struct Current {
        var receiver: any PinnedResponseReceiver
        var requestAllowsKeepAlive: Bool
        var head: HTTPResponseHead?
        var receivedBytes = false
        var informationalResponses = 0
        var silenceTimeout: TimeAmount
        /// When the request was written, or its last response byte arrived.
        var lastActivity: NIODeadline
    }

    private var current: Current?
    /// The silence timer: one per connection (or stream), checked lazily. Activity only moves
    /// `Current.lastActivity`; when the timer fires it ends a request silent for its timeout,
    /// or sets itself for when it would be. Scheduling and cancelling a timer on each request's
    /// write, head and body part cost about 15,000 instructions a request (issue 33).
    private var silenceTimer: (task: Scheduled<Void>, at: NIODeadline)?
    private var paused = false
    private var pendingRead = false
    private var closed = false
    /// Whether the pool has been told this connection (or stream) is gone: once, as soon as it
    /// starts closing. A TLS close waits for the peer's close_notify (swift-nio-ssl allows it
    /// five seconds), and a connection the pool still counted until then kept its slot: six timed-
    /// out or cancelled requests to a host that never answers close_notify stalled the next
    /// request to that host for seconds, whatever its own timeout.
    private var reportedClosed = false

    /// Whether its channel has closed.
    var isClosed: Bool { closed }

    init(events: PinnedConnection.Events, preamble: ResponsePreambleLimiter? = nil) {
        self.events = events
        self.preamble = preamble
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // The timer's closure holds this handler (and through it the channel): not past its life.
        silenceTimer?.task.cancel()
        silenceTimer = nil
    }

    /// Writes one request, once `gate` (the pool's last check, at the write itself) lets it.
    func execute(head: HTTPRequestHead, body: ByteBuffer?, silenceTimeout: TimeAmount, receiver: any PinnedResponseReceiver,
                 gate: PinnedConnectionPool.WriteGate) {
        guard let context, !closed, !reportedClosed, current == nil else {
            // The pool may have leased a connection whose close it has not heard of yet.
            reportClosed()
            receiver.fail(.connectionLost("The connection closed before the request was written."), afterResponseBytes: false)
            return
        }
        if let refused = gate.admit() {
            // A list installed since the lease withdrew the connection's pin: nothing was
            // written, and nothing will be. The connection (HTTP/1.1) or this stream (HTTP/2)
            // closes, and the pool hears of it now.
            context.close(promise: nil)
            reportClosed()
            receiver.fail(refused, afterResponseBytes: false)
            return
        }
        current = Current(receiver: receiver, requestAllowsKeepAlive: head.isKeepAlive, silenceTimeout: silenceTimeout,
                          lastActivity: .now())
        preamble?.expectResponse()
        watchSilence()
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // `current` is changed in place (`current?.x = ...`): a copy of it, written back, cost
        // retains and releases of its receiver and head on every part (issue 33).
        guard let receiver = current?.receiver else {
            // A response nobody asked for: the connection is out of step; drop it.
            context.close(promise: nil)
            return
        }
        current?.receivedBytes = true
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Informational answers (100 Continue, 103 Early Hints) precede the real one; a
            // server that sends them without end would keep the request busy until the timeout.
            if (100..<200).contains(head.status.code) {
                current?.informationalResponses += 1
                if (current?.informationalResponses ?? 0) > PinnedTransportLimits.maximumInformationalResponses {
                    finish(with: .misbehaving(.tooManyInformationalResponses(limit: PinnedTransportLimits.maximumInformationalResponses)),
                           context: context)
                }
                return
            }
            preamble?.responseHeadReceived()
            current?.head = head
            current?.lastActivity = .now()
            receiver.receiveHead(head)
        case .body(let part):
            // Only body bytes count as activity: empty parts must not hold the request open.
            if part.readableBytes > 0 { current?.lastActivity = .now() }
            if !receiver.receiveBodyPart(part) {
                paused = true
            }
        case .end:
            guard let request = current, let head = request.head else {
                finish(with: .badResponse("The response ended without a head."), context: context)
                return
            }
            // The silence timer stays armed: it finds no request when it fires, or the next one.
            current = nil
            paused = false
            let reusable = head.isKeepAlive && request.requestAllowsKeepAlive && !closed
            if !reusable { context.close(promise: nil) }
            // The pool first, so that the caller's next request finds the connection idle.
            events.requestFinished(reusable)
            receiver.receiveEnd()
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
        case HTTPParserError.headerOverflow: failure = PinnedHTTPFailure.classify(error, decision: nil)
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
        context.fireChannelInactive()
    }

    /// Tells the pool, once, that this connection (or stream) is gone.
    private func reportClosed() {
        guard !reportedClosed else { return }
        reportedClosed = true
        events.closed()
    }

    /// Fails the current request (if any) and closes the connection. The pool hears of the
    /// close before the request's receiver hears of the failure, so a caller who sees the
    /// failure finds the connection's slot free.
    private func finish(with failure: PinnedHTTPFailure, context: ChannelHandlerContext) {
        let request = current
        current = nil
        silenceTimer?.task.cancel()
        silenceTimer = nil
        context.close(promise: nil)
        reportClosed()
        if let request {
            request.receiver.fail(failure, afterResponseBytes: request.receivedBytes)
        }
    }

    /// Makes sure the silence timer fires no later than the current request's deadline.
    private func watchSilence() {
        guard let request = current else { return }
        let deadline = request.lastActivity + request.silenceTimeout
        if let armed = silenceTimer {
            // Armed for an earlier request: early enough unless this one's timeout is shorter.
            guard armed.at > deadline else { return }
            armed.task.cancel()
        }
        schedule(at: deadline)
    }

    private func schedule(at deadline: NIODeadline) {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        silenceTimer = (context.eventLoop.scheduleTask(deadline: deadline) { loopBound.value.silenceTimerFired() }, deadline)
    }

    private func silenceTimerFired() {
        silenceTimer = nil
        // No request: the timer lapses; the next request sets it again.
        guard let request = current else { return }
        let deadline = request.lastActivity + request.silenceTimeout
        if NIODeadline.now() >= deadline {
            abort(.timedOut)
        } else {
            schedule(at: deadline)
        }
    }
}

/// Bounds the bytes of an HTTP/1.1 response's preamble: the status line, the header lines, and
/// every informational (1xx) response before the final one. Sits in front of the response
/// decoder, counting the raw bytes that arrive between a request being written and its final
/// response head; past ``PinnedTransportLimits/maximumResponseHeadSize`` the request fails
/// with ``PinnedTransportError/responseHeadTooLarge(limit:)``.
///
/// Ours because NIOHTTP1 offers no such bound: its decoder limits (`NIOHTTPDecoderLimitConfiguration`)
/// count header fields only, and start again with each informational response. An endless
/// status line, or an endless series of 1xx responses, would otherwise be parsed until the
/// request timeout, at the server's pace (a core's worth of CPU).
final class ResponsePreambleLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var counting = false
    private var count = 0

    /// A request was written: its response's preamble starts with the next byte.
    func expectResponse() {
        counting = true
        count = 0
    }

    /// The final response head arrived: body bytes do not count.
    func responseHeadReceived() {
        counting = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard counting else {
            context.fireChannelRead(data)
            return
        }
        count += unwrapInboundIn(data).readableBytes
        context.fireChannelRead(data)
        // Checked after the decoder had these bytes: a read that holds the end of the head and
        // the start of the body does not count against the head.
        if counting, count > PinnedTransportLimits.maximumResponseHeadSize {
            counting = false
            context.fireErrorCaught(PinnedHTTPFailure.misbehaving(.responseHeadTooLarge(limit: PinnedTransportLimits.maximumResponseHeadSize)))
        }
    }
}

/// Sits behind swift-nio-http2's handler on an HTTP/2 connection and acts on its connection
/// errors: the library sends GOAWAY and reports the error down the pipeline, but neither closes
/// the connection nor ends its streams, whose requests would wait for their timeout. Here every
/// open stream's request fails at once with the cause, and the connection closes. The same for
/// a GOAWAY with an error code from the server: the server is ending the connection, and
/// swift-nio-http2 closes only the streams above the GOAWAY's last stream ID.
final class HTTP2ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    /// The connection's own frames (stream 0), which swift-nio-http2 passes on.
    typealias InboundIn = HTTP2Frame

    /// Set once the connection failed: no new stream is opened on it.
    private(set) var failure: PinnedHTTPFailure?
    private var streams: [WeakStream] = []

    private struct WeakStream {
        weak var handler: PinnedConnectionHandler?
    }

    /// A stream whose request fails with the connection.
    func register(_ handler: PinnedConnectionHandler) {
        streams.removeAll { $0.handler == nil || $0.handler?.isClosed == true }
        streams.append(WeakStream(handler: handler))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway(_, let code, _) = unwrapInboundIn(data).payload, code != .noError {
            fail(.misbehaving(.http2GoAway(errorCode: String(describing: code))), context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error ends its stream only (swift-nio-http2 resets it, and its request fails
        // there); TLS and socket errors close the connection through EstablishmentWatcher, and
        // its streams fail as it closes, as before.
        guard PinnedTransportError.isHTTP2ConnectionError(error) else { return }
        fail(PinnedHTTPFailure.classify(error, decision: nil), context: context)
    }

    private func fail(_ failure: PinnedHTTPFailure, context: ChannelHandlerContext) {
        guard self.failure == nil else { return }
        self.failure = failure
        let open = streams
        streams = []
        for stream in open {
            stream.handler?.abort(failure)
        }
        context.close(promise: nil)
    }
}
