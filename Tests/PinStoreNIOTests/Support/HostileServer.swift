import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import PinStore

/// A TLS server on 127.0.0.1 that answers every request the way a hostile (or badly broken)
/// server would: floods of HTTP/2 control frames while never reading, a header block that
/// never ends, an endless status line, a storm of 1xx responses, a flow-control window pushed
/// past its maximum, an unasked-for push.
///
/// It writes raw bytes (HTTP/2 frames built by hand, HTTP/1.1 text) over swift-nio-ssl, so
/// it can say what no well-behaved server library would let it say. Each connection is bounded
/// in bytes (`byteLimit`) and time (`timeLimit`) and closes itself at either bound; writes wait
/// for the previous write to complete, so the server itself buffers at most one chunk. It runs
/// on an event loop of its own: a flood written as fast as the client reads must not take the
/// shared loops that the other tests' clients and servers run on.
final class HostileServer: Sendable {
    enum Behaviour: Sendable, CaseIterable {
        // HTTP/2 (ALPN h2).
        /// Endless PING frames; the server stops reading after the handshake.
        case pingFlood
        /// Endless empty SETTINGS frames (each asks for an ACK); the server stops reading.
        case settingsFlood
        /// A HEADERS frame without END_HEADERS for the request's stream, then CONTINUATION
        /// frames forever.
        case continuationFlood
        /// A header block of CONTINUATION frames of 16,000 bytes each, forever: past any header
        /// size limit within a few frames.
        case http2OversizedHeaders
        /// Endless 103 (Early Hints) HEADERS frames on the request's stream.
        case http2InformationalStorm
        /// A WINDOW_UPDATE that pushes the connection window past 2^31-1, then silence.
        case windowUpdateOverflow
        /// A PUSH_PROMISE on the request's stream, then silence.
        case pushPromise
        /// A GOAWAY with INTERNAL_ERROR that keeps the request's stream (last stream ID 1), then
        /// silence with the connection open.
        case goAwayWithError
        /// A response head, then empty DATA frames forever: bytes on the wire, none of body.
        case emptyDataTrickle
        // HTTP/1.1 (ALPN http/1.1).
        /// `HTTP/1.1 200 ` followed by an endless reason phrase.
        case endlessStatusLine
        /// `103 Early Hints` responses, forever.
        case informationalStorm
        /// `HTTP/1.1 200 OK`, then header lines forever.
        case endlessHeaders
        /// Not hostile: three `103 Early Hints`, then `200 OK` with the body `final`, then silence
        /// (the limits let a well-behaved server through).
        case informationalThenFinal

        var speaksHTTP2: Bool {
            switch self {
            case .pingFlood, .settingsFlood, .continuationFlood, .http2OversizedHeaders, .http2InformationalStorm, .windowUpdateOverflow,
                 .pushPromise, .goAwayWithError, .emptyDataTrickle: true
            case .endlessStatusLine, .informationalStorm, .endlessHeaders, .informationalThenFinal: false
            }
        }

        /// Whether the server stops reading once the handshake is done (and the request, if any,
        /// has arrived): what it sends then asks for answers that pile up on the client.
        var stopsReading: Bool {
            self == .pingFlood || self == .settingsFlood
        }
    }

    let port: Int
    /// Bytes written to clients (before encryption), over all connections.
    let sentBytes: Locked<Int>
    /// Connections whose TLS handshake completed.
    let handshakes: Locked<Int>
    private let channel: any Channel
    private let children: Locked<[any Channel]>
    private let group: MultiThreadedEventLoopGroup

    private init(port: Int, channel: any Channel, children: Locked<[any Channel]>, sentBytes: Locked<Int>, handshakes: Locked<Int>,
                 group: MultiThreadedEventLoopGroup) {
        self.group = group
        self.port = port
        self.channel = channel
        self.children = children
        self.sentBytes = sentBytes
        self.handshakes = handshakes
    }

    /// Starts a hostile server presenting the localhost fixture chain. Each connection stops
    /// after `byteLimit` bytes or `timeLimit`, whichever comes first.
    static func start(_ behaviour: Behaviour, byteLimit: Int = 512 << 20, timeLimit: TimeAmount = .seconds(30)) async throws -> HostileServer {
        let tls = try TestServer.context(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem") { configuration in
            configuration.applicationProtocols = behaviour.speaksHTTP2 ? ["h2"] : ["http/1.1"]
        }
        let children = Locked<[any Channel]>([])
        let sentBytes = Locked(0)
        let handshakes = Locked(0)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                children.withLock { $0.append(child) }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try child.pipeline.syncOperations.addHandler(
                        HostileHandler(behaviour: behaviour, byteLimit: byteLimit, timeLimit: timeLimit, sentBytes: sentBytes,
                                       handshakes: handshakes))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else {
            try? await group.shutdownGracefully()
            throw TestServerError.noPort
        }
        return HostileServer(port: port, channel: channel, children: children, sentBytes: sentBytes, handshakes: handshakes, group: group)
    }

    /// Stops listening, closes every connection and stops its event loop.
    func shutdown() async {
        for child in children.withLock({ $0 }) {
            try? await child.close()
        }
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// One hostile connection: waits for the handshake and the request, then writes its chunks.
private final class HostileHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let behaviour: HostileServer.Behaviour
    private let byteLimit: Int
    private let timeLimit: TimeAmount
    private let sentBytes: Locked<Int>
    private let handshakes: Locked<Int>
    private var received = ByteBuffer()
    private var handshakeDone = false
    private var started = false
    private var sent = 0
    private var deadline = NIODeadline.distantFuture

    init(behaviour: HostileServer.Behaviour, byteLimit: Int, timeLimit: TimeAmount, sentBytes: Locked<Int>, handshakes: Locked<Int>) {
        self.behaviour = behaviour
        self.byteLimit = byteLimit
        self.timeLimit = timeLimit
        self.sentBytes = sentBytes
        self.handshakes = handshakes
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            handshakeDone = true
            handshakes.withLock { $0 += 1 }
            deadline = .now() + timeLimit
            // Whatever happens, the connection ends at the time limit.
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: timeLimit) { loopBound.value.close(promise: nil) }
            if behaviour.speaksHTTP2 {
                // The server's SETTINGS, and the acknowledgement of the client's (which puts them,
                // SETTINGS_ENABLE_PUSH = 0 among them, in force): some clients (AsyncHTTPClient)
                // send no request before the server's SETTINGS arrived.
                var preface = ByteBuffer()
                H2.frame(type: 4, flags: 0, stream: 0, payload: [], into: &preface)
                H2.frame(type: 4, flags: 0x1, stream: 0, payload: [], into: &preface)
                sent += preface.readableBytes
                sentBytes.withLock { $0 += preface.readableBytes }
                context.writeAndFlush(wrapOutboundOut(preface), promise: nil)
            }
            if behaviour.stopsReading {
                // The floods that ask for answers: the server reads no more, so the client's
                // answers pile up on its side.
                context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
                start(context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !started else { return }
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        if requestArrived() { start(context: context) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// HTTP/1.1: the end of the request head. HTTP/2: the client's first HEADERS frame.
    private func requestArrived() -> Bool {
        let view = received.readableBytesView
        if !behaviour.speaksHTTP2 {
            return view.firstRange(of: Array("\r\n\r\n".utf8)) != nil
        }
        var offset = received.readerIndex + 24  // the client preface
        while let length = received.getInteger(at: offset, as: UInt32.self).map({ Int($0 >> 8) }),
              let type = received.getInteger(at: offset + 3, as: UInt8.self) {
            if type == 1 { return true }
            offset += 9 + length
        }
        return false
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        var first = ByteBuffer()
        Self.opening(behaviour, into: &first)
        write(first, context: context)
    }

    /// Writes `chunk`, then the next one once it is out, until a limit is reached.
    private func write(_ chunk: ByteBuffer, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        guard sent < byteLimit, NIODeadline.now() < deadline else {
            context.close(promise: nil)
            return
        }
        sent += chunk.readableBytes
        sentBytes.withLock { $0 += chunk.readableBytes }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(chunk), promise: promise)
        guard let next = Self.next(behaviour) else { return }
        promise.futureResult.whenSuccess {
            // On the next tick: a write that completed at once would otherwise recurse.
            loopBound.eventLoop.execute {
                let (handler, context) = loopBound.value
                handler.write(next, context: context)
            }
        }
    }

    /// What is sent first, right after the request (or the handshake).
    private static func opening(_ behaviour: HostileServer.Behaviour, into buffer: inout ByteBuffer) {
        switch behaviour {
        case .continuationFlood, .http2OversizedHeaders:
            // `:status: 200` (HPACK static index 8), and no END_HEADERS.
            H2.frame(type: 1, flags: 0, stream: 1, payload: [0x88], into: &buffer)
        case .windowUpdateOverflow:
            // 65,535 + 2^31 - 1 is past the largest window HTTP/2 allows: a FLOW_CONTROL_ERROR.
            H2.frame(type: 8, flags: 0, stream: 0, payload: [0x7F, 0xFF, 0xFF, 0xFF], into: &buffer)
        case .pushPromise:
            // Promised stream 2: GET https://localhost/pushed.
            var block: [UInt8] = [0, 0, 0, 2, 0x82, 0x87, 0x04, 0x07]
            block += Array("/pushed".utf8)
            block += [0x01, 0x09] + Array("localhost".utf8)
            H2.frame(type: 5, flags: 0x4, stream: 1, payload: block, into: &buffer)
        case .goAwayWithError:
            H2.frame(type: 7, flags: 0, stream: 0, payload: [0, 0, 0, 1, 0, 0, 0, 2], into: &buffer)
        case .emptyDataTrickle:
            // `:status: 200` (HPACK static index 8), END_HEADERS, the stream left open.
            H2.frame(type: 1, flags: 0x4, stream: 1, payload: [0x88], into: &buffer)
        case .endlessStatusLine:
            buffer.writeString("HTTP/1.1 200 ")
        case .endlessHeaders:
            buffer.writeString("HTTP/1.1 200 OK\r\n")
        case .informationalThenFinal:
            buffer.writeString(String(repeating: "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", count: 3))
            buffer.writeString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
        case .pingFlood, .settingsFlood, .http2InformationalStorm, .informationalStorm:
            break
        }
    }

    /// The chunk written over and over after the opening, or nil when the opening is all.
    private static func next(_ behaviour: HostileServer.Behaviour) -> ByteBuffer? {
        switch behaviour {
        case .pingFlood: return Chunks.pings
        case .settingsFlood: return Chunks.settings
        case .continuationFlood: return Chunks.continuations
        case .http2OversizedHeaders: return Chunks.largeContinuations
        case .http2InformationalStorm: return Chunks.http2EarlyHints
        case .endlessStatusLine: return Chunks.reasonPhrase
        case .informationalStorm: return Chunks.earlyHints
        case .endlessHeaders: return Chunks.headerLines
        case .emptyDataTrickle: return Chunks.emptyData
        case .windowUpdateOverflow, .pushPromise, .goAwayWithError, .informationalThenFinal: return nil
        }
    }
}

/// HTTP/2 frames by hand (RFC 9113, section 4.1).
private enum H2 {
    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8], into buffer: inout ByteBuffer) {
        let length = UInt32(payload.count)
        buffer.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeInteger(UInt16(truncatingIfNeeded: length))
        buffer.writeInteger(type)
        buffer.writeInteger(flags)
        buffer.writeInteger(stream & 0x7FFF_FFFF)
        buffer.writeBytes(payload)
    }

    static func repeated(_ count: Int, _ make: (inout ByteBuffer) -> Void) -> ByteBuffer {
        var buffer = ByteBuffer()
        for _ in 0..<count { make(&buffer) }
        return buffer
    }
}

/// The repeated chunks, about 16 KiB each.
private enum Chunks {
    static let pings = H2.repeated(1_000) { H2.frame(type: 6, flags: 0, stream: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8], into: &$0) }
    static let settings = H2.repeated(1_800) { H2.frame(type: 4, flags: 0, stream: 0, payload: [], into: &$0) }
    /// CONTINUATION frames of 1 KiB each: `x-filler: aaa…` literals, without END_HEADERS.
    static let continuations = H2.repeated(16) { buffer in
        var field: [UInt8] = [0x00, 0x08] + Array("x-filler".utf8) + [0x7F, 0xF4, 0x06]  // a value of 1,011 bytes
        field += [UInt8](repeating: 0x61, count: 1_024 - field.count)
        H2.frame(type: 9, flags: 0, stream: 1, payload: field, into: &buffer)
    }
    /// One CONTINUATION frame of 16,000 bytes: a `x-filler` literal with a value of 15,987 bytes.
    static let largeContinuations = H2.repeated(1) { buffer in
        // 15,987 - 127 = 15,860: 0x74 | 0x80, then 0x7B (7 bits at a time, low first).
        var field: [UInt8] = [0x00, 0x08] + Array("x-filler".utf8) + [0x7F, 0xF4, 0x7B]
        field += [UInt8](repeating: 0x61, count: 16_000 - field.count)
        H2.frame(type: 9, flags: 0, stream: 1, payload: field, into: &buffer)
    }
    /// `:status: 103`, a literal without indexing on static name 8, END_HEADERS.
    static let http2EarlyHints = H2.repeated(1_000) {
        H2.frame(type: 1, flags: 0x4, stream: 1, payload: [0x08, 0x03] + Array("103".utf8), into: &$0)
    }
    /// One empty DATA frame on the request's stream (no END_STREAM): a trickle, not a flood.
    static let emptyData = H2.repeated(1) { H2.frame(type: 0, flags: 0, stream: 1, payload: [], into: &$0) }
    static let reasonPhrase = ByteBuffer(repeating: UInt8(ascii: "A"), count: 16 * 1_024)
    static let earlyHints = ByteBuffer(string: String(repeating: "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", count: 256))
    static let headerLines = ByteBuffer(string: String(repeating: "X-Filler: " + String(repeating: "a", count: 100) + "\r\n", count: 140))
}
