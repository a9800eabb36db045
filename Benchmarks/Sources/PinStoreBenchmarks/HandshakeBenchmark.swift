import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO
import Synchronization

// Issue 4: a full TLS handshake plus one small request on loopback through the pinned transport
// (PinningTLSVerifier: OpenSSL chain validation + pin lookup in the verification callback)
// versus the same transport with swift-nio-ssl's normal verification only (BoringSSL), in one
// run. Same server, same TLSConfiguration, same request; only the client TLS handler differs.

/// `Fixtures/` of the main package: this file is Benchmarks/Sources/PinStoreBenchmarks/X.swift.
private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

private func fixtureText(_ path: String) throws -> String {
    try String(contentsOf: fixtures.appendingPathComponent(path), encoding: .utf8)
}

private enum HandshakeBenchmarkError: Error, CustomStringConvertible {
    case noPort
    case incompleteResponse(String)
    case check(String)

    var description: String {
        switch self {
        case .noPort: "the loopback server has no port"
        case .incompleteResponse(let detail): "incomplete response: \(detail)"
        case .check(let detail): "sanity check failed: \(detail)"
        }
    }
}

// MARK: - Server

/// Answers every request with a small 200 body, `Connection: close`, then closes.
private final class SmallResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let body = "hello over loopback TLS\n"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: String(Self.body.utf8.count))
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: Self.body)))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

private func startServer(group: any EventLoopGroup) throws -> any Channel {
    let chain = try NIOSSLCertificate.fromPEMFile(fixtures.appendingPathComponent("pki/localhost-chain.pem").path)
    let key = try NIOSSLPrivateKey(file: fixtures.appendingPathComponent("pki/localhost.key.pem").path, format: .pem)
    let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
    let context = try NIOSSLContext(configuration: configuration)
    return try ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { child in
            child.eventLoop.makeCompletedFuture {
                let pipeline = child.pipeline.syncOperations
                try pipeline.addHandler(NIOSSLServerHandler(context: context))
                try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                try pipeline.addHandler(SmallResponder())
            }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
}

// MARK: - Client

/// Sends `GET / HTTP/1.1` (swift-nio-ssl holds it until the handshake completes), reads the
/// whole response, then closes.
private final class OneRequestClient: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let done: EventLoopPromise<Void>
    private var status: HTTPResponseStatus?
    private var bodyBytes = 0
    private var finished = false

    init(done: EventLoopPromise<Void>) { self.done = done }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "localhost")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): status = head.status
        case .body(let chunk): bodyBytes += chunk.readableBytes
        case .end:
            guard status == .ok, bodyBytes == SmallResponder.body.utf8.count else {
                finish(.failure(HandshakeBenchmarkError.incompleteResponse("status \(String(describing: status)), \(bodyBytes) body bytes")))
                context.close(promise: nil)
                return
            }
            finish(.success(()))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // After the whole response, an unclean shutdown is of no interest.
        finish(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(HandshakeBenchmarkError.incompleteResponse("closed after \(bodyBytes) body bytes")))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<Void, any Error>) {
        guard !finished else { return }
        finished = true
        done.completeWith(result)
    }
}

/// One client: a TLS handler maker (pinned or baseline) over the same code.
private struct LoopbackClient: Sendable {
    let group: any EventLoopGroup
    let port: Int
    let makeTLSHandler: @Sendable () throws -> NIOSSLClientHandler

    /// Connect, full handshake, one GET, the whole response, closed.
    func connectOnce() -> EventLoopFuture<Void> {
        let eventLoop = group.next()
        let done = eventLoop.makePromise(of: Void.self)
        let makeTLSHandler = self.makeTLSHandler
        return ClientBootstrap(group: eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(makeTLSHandler())
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(OneRequestClient(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .flatMapError { error in
                done.fail(error)
                return eventLoop.makeFailedFuture(error)
            }
            .flatMap { channel in done.futureResult.flatMap { channel.closeFuture } }
    }

    /// `count` connections one after the other, chained on the event loop (no thread hop between
    /// them); returns the wall time of all.
    func sequential(_ count: Int) throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try chain(remaining: count).wait()
        return clock.now - start
    }

    private func chain(remaining: Int) -> EventLoopFuture<Void> {
        let first = connectOnce()
        guard remaining > 1 else { return first }
        return first.flatMap { chain(remaining: remaining - 1) }
    }
}

// MARK: - Benchmark

/// The pin decisions of the sanity-check connections.
private final class DecisionLog: Sendable {
    let allowed = Mutex<[Bool]>([])
}

private func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Pinned versus normal-verification-only connections, and the pin evaluation alone.
/// The loopback server and the client side every handshake measurement shares: one thread for
/// the server, one for the clients (the two sides of each handshake overlap as they would across
/// machines, and neither waits for the other's thread), and one TLSConfiguration for both
/// clients: the fixture root as the only trust root, certificateVerification .fullVerification
/// (the default). swift-nio-ssl never sets a client session (no SSL_set_session), so every
/// connection is a full handshake.
private final class LoopbackHandshakes {
    let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let server: any Channel
    let port: Int
    let context: NIOSSLContext
    let trustRoots: TrustRoots

    init() throws {
        server = try startServer(group: serverGroup)
        guard let port = server.localAddress?.port else { throw HandshakeBenchmarkError.noPort }
        self.port = port
        let rootPEM = try fixtureText("pki/root-ca.pem")
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(rootPEM.utf8)))
        context = try NIOSSLContext(configuration: tls)
        trustRoots = .anchors(try X509Certificate.certificates(pem: rootPEM))
    }

    func shutdown() {
        try? server.close().wait()
        try? clientGroup.syncShutdownGracefully()
        try? serverGroup.syncShutdownGracefully()
    }

    /// A store whose fallback is `fallback` (the fixture list pinning localhost by default).
    func store(identifier: String, fallback: Data? = nil) throws -> PinStore {
        try PinStore(configuration: .init(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                          publicKey: try fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
                                          identifier: identifier,
                                          fallbackData: try fallback ?? Data(fixtureText("lists/static-good.json").utf8),
                                          storageDirectory: scratchDirectory()),
                     fetcher: FixedFetcher(body: Data()))
    }

    /// Connections through `verifier` (pinned), or through swift-nio-ssl's verification alone.
    func client(_ verifier: PinningTLSVerifier?,
                onDecision: (@Sendable (PinningDecision) -> Void)? = nil) -> LoopbackClient {
        let context = self.context
        return LoopbackClient(group: clientGroup, port: port) {
            guard let verifier else { return try NIOSSLClientHandler(context: context, serverHostname: "localhost") }
            return try verifier.makeClientHandler(context: context, serverHostname: "localhost", onDecision: onDecision)
        }
    }
}

func handshakeBenchmarkRows(connectionsPerSample: Int = 300, samples: Int = 7) throws -> [Row] {
    let loopback = try LoopbackHandshakes()
    defer { loopback.shutdown() }
    let store = try loopback.store(identifier: "handshake")
    let trustRoots = loopback.trustRoots
    let verifier = PinningTLSVerifier(store: store, trustRoots: trustRoots)
    let pinned = loopback.client(verifier)
    let baseline = loopback.client(nil)

    // Sanity: every pinned connection is allowed by the pin check, and the callback runs on each
    // one (a resumed session would skip it), so each is a full handshake.
    let decisions = DecisionLog()
    let checked = loopback.client(verifier, onDecision: { decision in decisions.allowed.withLock { $0.append(decision.isAllowed) } })
    _ = try checked.sequential(20)
    let seen = decisions.allowed.withLock { $0 }
    guard seen.count == 20, seen.allSatisfy({ $0 }) else {
        throw HandshakeBenchmarkError.check("expected 20 allowed pinned handshakes, saw \(seen)")
    }
    // And a store pinning nothing for localhost must refuse: the pinned path really pins.
    let emptyStore = try loopback.store(identifier: "handshake-empty", fallback: Data(#"{"fingerprints":[]}"#.utf8))
    let refused = loopback.client(PinningTLSVerifier(store: emptyStore, trustRoots: trustRoots))
    if (try? refused.sequential(1)) != nil {
        throw HandshakeBenchmarkError.check("a store without a pin for localhost accepted the connection")
    }

    // Warm-up, then interleaved samples (A B, B A, ...) so drift hits both sides alike.
    _ = try pinned.sequential(connectionsPerSample / 3)
    _ = try baseline.sequential(connectionsPerSample / 3)
    var pinnedSamples: [Double] = []
    var baselineSamples: [Double] = []
    for sample in 0..<samples {
        let order = sample % 2 == 0 ? [true, false] : [false, true]
        for isPinned in order {
            let elapsed = nanoseconds(try (isPinned ? pinned : baseline).sequential(connectionsPerSample)) / Double(connectionsPerSample)
            if isPinned { pinnedSamples.append(elapsed) } else { baselineSamples.append(elapsed) }
        }
    }
    let pinnedConnection = median(pinnedSamples)
    let baselineConnection = median(baselineSamples)
    let ratio = pinnedConnection / baselineConnection
    // Per-pair ratios too: their spread says how much of the ratio is noise.
    let pairRatios = zip(pinnedSamples, baselineSamples).map { $0 / $1 }.sorted()

    // The pin evaluation alone (what the callback adds over swift-nio-ssl's own verification,
    // minus the DER round trips): chain validation with OpenSSL, host name, pin lookup.
    let evaluator = PinningEvaluator(store: store, trustRoots: trustRoots)
    let presented = try X509Certificate.certificates(pem: fixtureText("pki/localhost-chain.pem")).map(\.derRepresentation)
    guard evaluator.evaluateNow(host: "localhost", presentedChain: presented).isAllowed else {
        throw HandshakeBenchmarkError.check("evaluateNow refused the fixture chain")
    }
    let operations = 500
    let evaluation = Harness.nanosecondsPerOperation(operations: operations, samples: 7) {
        for _ in 0..<operations { Harness.consume(evaluator.evaluateNow(host: "localhost", presentedChain: presented)) }
    }

    // The first connection to a server verifies its chain with OpenSSL for real (later ones
    // reuse the verification). Fresh trust roots each call make every evaluation a first one;
    // building them (one anchor) is included, so this is an upper bound.
    let rootCertificate = trustRoots.anchors
    let coldOperations = 50
    let cold = Harness.nanosecondsPerOperation(operations: coldOperations, samples: 5) {
        for _ in 0..<coldOperations {
            let fresh = PinningEvaluator(store: store, trustRoots: .anchors(rootCertificate))
            Harness.consume(fresh.evaluateNow(host: "localhost", presentedChain: presented))
        }
    }

    return [
        Row(name: "TLS handshake + GET, loopback, per connection",
            value: "pinned " + Harness.format(pinnedConnection),
            baseline: "NIOSSL verification only \(Harness.format(baselineConnection))",
            ratio: String(format: "%.3fx (pairs %.3f-%.3f)", ratio, pairRatios.first ?? 0, pairRatios.last ?? 0),
            target: "< 1.05x", met: ratio < 1.05),
        Row(name: "evaluateNow alone (chain + host + pin)",
            value: Harness.format(evaluation),
            baseline: "pinned conn. \(Harness.format(pinnedConnection)), added \(Harness.format(pinnedConnection - baselineConnection))",
            ratio: String(format: "%.2fx of conn., %.2fx of added", evaluation / pinnedConnection,
                          evaluation / (pinnedConnection - baselineConnection)),
            target: "report", met: nil),
        Row(name: "first connection to a server (cold verification)",
            value: "evaluateNow cold " + Harness.format(cold),
            baseline: "NIOSSL verification only \(Harness.format(baselineConnection))",
            ratio: String(format: "~%.2fx projected", (baselineConnection + cold) / baselineConnection),
            target: "report", met: nil),
    ]
}

// MARK: - Soak (SoakBenchmark.swift's `soak-handshakes`)

/// Child of `soak-handshakes`: `handshakes` connections one after the other (full handshake, one
/// request, closed) through the pinned verifier (`pinned`) or swift-nio-ssl's verification
/// alone, server and client in this process; prints the resident samples after 1,000, after
/// 10,000 and at the end.
func soakHandshakesChild(mode: String, handshakes: Int) throws {
    let loopback = try LoopbackHandshakes()
    defer { loopback.shutdown() }
    let client = loopback.client(mode == "pinned"
        ? PinningTLSVerifier(store: try loopback.store(identifier: "handshake-soak"), trustRoots: loopback.trustRoots)
        : nil)
    /// In chains of at most 1,000, so no future chain grows with the run.
    func connect(_ count: Int) throws {
        var left = count
        while left > 0 {
            let batch = min(left, 1_000)
            _ = try client.sequential(batch)
            left -= batch
        }
    }
    try connect(1_000)
    let afterWarmUp = currentResidentBytes()
    try connect(9_000)
    let partWay = currentResidentBytes()
    try connect(max(handshakes - 10_000, 0))
    SoakSamples(afterWarmUp: afterWarmUp, partWay: partWay, atEnd: currentResidentBytes(),
                operationsBetween: max(handshakes - 10_000, 0)).emit()
}
