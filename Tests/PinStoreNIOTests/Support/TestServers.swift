import Foundation
import PinStoreTestSupport
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import PinStore

/// An HTTP/1.1 server on 127.0.0.1 (port 0), with TLS from fixture certificates or in the
/// clear. It counts the bytes its HTTP layer received after decryption, so a test can prove
/// that a refused client sent no request byte.
final class TestServer: Sendable {
    /// The port the server listens on.
    let port: Int
    private let channel: any Channel
    private let children: Locked<[any Channel]>
    /// Decrypted bytes that reached the HTTP decoder, over all connections.
    let receivedBytes: Locked<Int>
    /// The request targets received (method and URI), in arrival order.
    let requests: Locked<[String]>
    /// Body bytes written by `/stream` so far.
    let streamedBytes: Locked<Int>

    private init(port: Int, channel: any Channel, children: Locked<[any Channel]>, receivedBytes: Locked<Int>, requests: Locked<[String]>,
                 streamedBytes: Locked<Int>) {
        self.streamedBytes = streamedBytes
        self.port = port
        self.channel = channel
        self.children = children
        self.receivedBytes = receivedBytes
        self.requests = requests
    }

    /// Starts a TLS server presenting `chain` (PEM fixtures, leaf first) with `key`.
    /// `compressing`: responses are gzip- or deflate-encoded when the request accepts it
    /// (swift-nio-extras' `NIOHTTPResponseCompressor`).
    /// `configure` changes the server's TLS configuration (protocol versions, cipher suites).
    static func tls(chain: [String], key: String, compressing: Bool = false,
                    configure: (inout TLSConfiguration) -> Void = { _ in }) async throws -> TestServer {
        try await start(tls: try context(chain: chain, key: key, configure: configure), compressing: compressing)
    }

    /// The server side TLS context for a fixture chain and key.
    static func context(chain: [String], key: String, configure: (inout TLSConfiguration) -> Void = { _ in }) throws -> NIOSSLContext {
        let certificates = try chain.flatMap { try NIOSSLCertificate.fromPEMFile(TestResources.fixtures.appendingPathComponent($0).path) }
        let privateKey = try NIOSSLPrivateKey(file: TestResources.fixtures.appendingPathComponent(key).path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        configure(&configuration)
        return try NIOSSLContext(configuration: configuration)
    }

    /// The TLS connections accepted so far (each one a handshake).
    var connectionCount: Int { children.withLock { $0.count } }

    /// Closes every open connection (as a server does with idle keep-alive connections), and
    /// waits until they are closed.
    func closeConnections() async {
        for child in children.withLock({ $0 }) {
            try? await child.close()
        }
    }

    /// Starts a TLS server that speaks only HTTP/2 (ALPN `h2`), each stream answered like an
    /// HTTP/1.1 request.
    static func http2(chain: [String], key: String) async throws -> TestServer {
        let certificates = try chain.flatMap { try NIOSSLCertificate.fromPEMFile(TestResources.fixtures.appendingPathComponent($0).path) }
        let privateKey = try NIOSSLPrivateKey(file: TestResources.fixtures.appendingPathComponent(key).path, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) },
                                                                     privateKey: .privateKey(privateKey))
        configuration.applicationProtocols = ["h2"]
        let tls = try NIOSSLContext(configuration: configuration)
        let children = Locked<[any Channel]>([])
        let receivedBytes = Locked(0)
        let requests = Locked<[String]>([])
        let streamedBytes = Locked(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                children.withLock { $0.append(child) }
                return child.eventLoop.makeCompletedFuture {
                    let pipeline = child.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLServerHandler(context: tls))
                    try pipeline.addHandler(ByteCounter(count: receivedBytes))
                    _ = try pipeline.configureHTTP2Pipeline(mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            try stream.pipeline.syncOperations.addHandler(Responder(requests: requests, streamedBytes: streamedBytes))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TestServerError.noPort }
        return TestServer(port: port, channel: channel, children: children, receivedBytes: receivedBytes, requests: requests,
                          streamedBytes: streamedBytes)
    }

    /// Starts a plain-HTTP server (the list server of the update tests).
    static func plain() async throws -> TestServer {
        try await start(tls: nil)
    }

    private static func start(tls: NIOSSLContext?, compressing: Bool = false) async throws -> TestServer {
        let children = Locked<[any Channel]>([])
        let receivedBytes = Locked(0)
        let requests = Locked<[String]>([])
        let streamedBytes = Locked(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                children.withLock { $0.append(child) }
                return child.eventLoop.makeCompletedFuture {
                    let pipeline = child.pipeline.syncOperations
                    if let tls {
                        try pipeline.addHandler(NIOSSLServerHandler(context: tls))
                    }
                    try pipeline.addHandler(ByteCounter(count: receivedBytes))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    if compressing {
                        try pipeline.addHandler(HTTPResponseCompressor())
                    }
                    try pipeline.addHandler(Responder(requests: requests, streamedBytes: streamedBytes))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw TestServerError.noPort }
        return TestServer(port: port, channel: channel, children: children, receivedBytes: receivedBytes, requests: requests,
                          streamedBytes: streamedBytes)
    }

    /// Stops listening and closes every connection.
    func shutdown() async {
        for child in children.withLock({ $0 }) {
            try? await child.close()
        }
        try? await channel.close()
    }
}

enum TestServerError: Error { case noPort }

/// The canned answers:
/// - `/drop-if-reused`: like `/hello` on a new connection; on a reused one, closes without answering;
/// - `/hello`: 200, `X-Test-Header: pinned`, body `hello over a pinned connection`;
/// - `/redirect?to=<url>`: 302 to `<url>`;
/// - `/echo`: 200, body `<METHOD> <request body>`;
/// - `/slow`: never answers (timeouts and cancellation);
/// - `/big`: 200 with 1 MiB of a repeating pattern, chunked;
/// - `/list.json`: `Fixtures/lists/static-good.json`;
/// - `/headers`: 200, the request's headers as lines `name: value`, sorted by name;
/// - `/cookie?set=<name=value>`: 200 with `Set-Cookie: <name=value>; Path=/`;
/// - `/close`: 200 with `Connection: close`, then the server closes;
/// - `/http10`: an HTTP/1.0 response (no keep-alive);
/// - `/drip?bytes=<n>&ms=<m>`: `Content-Length: n`, then one byte every m milliseconds;
/// - `/stream?mib=<n>`: n MiB of the pattern, written as the client reads (`mib=0`: endless);
/// - `/stall`: a head announcing 1 MiB and 1 KiB of it, then nothing;
/// - anything else: 404.
private final class Responder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let helloBody = "hello over a pinned connection"
    private let requests: Locked<[String]>
    private let streamedBytes: Locked<Int>
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    /// Requests answered on this connection.
    private var served = 0

    init(requests: Locked<[String]>, streamedBytes: Locked<Int>) {
        self.requests = requests
        self.streamedBytes = streamedBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            requests.withLock { $0.append("\(head.method.rawValue) \(head.uri)") }
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            served += 1
            if head.uri == "/drop-if-reused", served > 1 {
                // What a server's idle close racing a client's next request looks like.
                context.close(promise: nil)
                return
            }
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let components = URLComponents(string: head.uri)
        switch components?.path ?? "" {
        case "/hello", "/drop-if-reused":
            send(.ok, ["X-Test-Header": "pinned", "Content-Type": "text/plain"], Self.helloBody, context: context)
        case "/redirect":
            let target = components?.queryItems?.first { $0.name == "to" }?.value ?? "/"
            send(.found, ["Location": target], "", context: context)
        case "/echo":
            send(.ok, [:], head.method.rawValue + " " + String(buffer: body), context: context)
        case "/slow":
            break
        case "/big":
            var headers = HTTPHeaders()
            headers.add(name: "Transfer-Encoding", value: "chunked")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            for _ in 0..<(1 << 20) / 1024 {
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: Self.bigChunk)))), promise: nil)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case "/headers":
            let lines = head.headers.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
            send(.ok, [:], lines.joined(separator: "\n"), context: context)
        case "/cookie":
            let cookie = components?.queryItems?.first { $0.name == "set" }?.value ?? "a=b"
            send(.ok, ["Set-Cookie": cookie + "; Path=/"], "cookie set", context: context)
        case "/close":
            send(.ok, ["Connection": "close"], "closing", context: context)
            context.close(promise: nil)
        case "/http10":
            let text = "one-point-oh"
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(text.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_0, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case "/drip":
            let bytes = Int(components?.queryItems?.first { $0.name == "bytes" }?.value ?? "") ?? 12
            let interval = Int64(components?.queryItems?.first { $0.name == "ms" }?.value ?? "") ?? 500
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(bytes))
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            for index in 0..<bytes {
                context.eventLoop.scheduleTask(in: .milliseconds(interval * Int64(index + 1))) {
                    let (responder, context) = loopBound.value
                    guard context.channel.isActive else { return }
                    context.writeAndFlush(responder.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "x")))), promise: nil)
                    if index == bytes - 1 { context.writeAndFlush(responder.wrapOutboundOut(.end(nil)), promise: nil) }
                }
            }
        case "/stream":
            let mib = Int(components?.queryItems?.first { $0.name == "mib" }?.value ?? "") ?? 1
            var headers = HTTPHeaders()
            if mib > 0 {
                headers.add(name: "Content-Length", value: String(mib << 20))
            } else {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            writeStream(remaining: mib > 0 ? mib * 16 : Int.max, context: context)
        case "/stall":
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(1 << 20))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: Self.bigChunk)))), promise: nil)
        case "/list.json":
            let list = (try? TestResources.fixtureText("lists/static-good.json")) ?? ""
            send(.ok, ["Content-Type": "application/json"], list, context: context)
        default:
            send(.notFound, [:], "not found", context: context)
        }
    }

    /// 64 KiB of the pattern.
    static let streamChunk = ByteBuffer(bytes: (0..<(64 * 1024)).map { UInt8($0 % 256) })

    /// Writes `remaining` 64 KiB chunks, each after the previous one was written: the server
    /// goes no faster than the client reads.
    private func writeStream(remaining: Int, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if remaining == 0 {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        streamedBytes.withLock { $0 += Self.streamChunk.readableBytes }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(Self.streamChunk)))).whenSuccess {
            let (responder, context) = loopBound.value
            responder.writeStream(remaining: remaining - 1, context: context)
        }
    }

    /// 1 KiB: the bytes 0...255 four times.
    static let bigChunk: [UInt8] = (0..<1024).map { UInt8($0 % 256) }

    private func send(_ status: HTTPResponseStatus, _ fields: [String: String], _ text: String, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(fields.map { ($0.key, $0.value) })
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// Counts the (decrypted) bytes on their way to the HTTP decoder.
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

/// Stores and trust settings the adapter tests share.
enum Pins {
    static var anchors: TrustRoots {
        get throws { .anchors([try TestResources.certificate("pki/root-ca.pem")]) }
    }

    /// A store whose pins are `fallback` (static-format JSON; fallback signatures are not checked).
    /// `exceptions`: ATS transport-minimum exceptions of the store.
    static func store(fallback: Data?, serviceURL: String = "http://127.0.0.1:1/unused",
                      exceptions: [TransportSecurityException] = []) throws -> PinStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-nio-\(UUID().uuidString)")
        var configuration = PinStore.Configuration(
            serviceURL: URL(string: serviceURL)!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            fallbackData: fallback,
            storageDirectory: directory,
            requestTimeout: HangGuard.seconds)
        configuration.transportSecurityExceptions = exceptions
        return try PinStore(configuration: configuration)
    }

    /// `lists/static-good.json`: localhost pinned to `pki/localhost.pem`.
    static func good() throws -> PinStore {
        try store(fallback: TestResources.fixture("lists/static-good.json"))
    }

    /// A store pinning `certificate` (a PEM fixture) for localhost at `depth`.
    static func pinning(_ certificate: String, depth: Int = 0, exceptions: [TransportSecurityException] = []) throws -> PinStore {
        let fingerprint = try TestResources.certificate(certificate).fingerprintBase64
        let list = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799,"depth":\#(depth)}]}"#
        return try store(fallback: Data(list.utf8), exceptions: exceptions)
    }
}
