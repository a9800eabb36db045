import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import Synchronization

// Issue 10: a pinned AsyncHTTPClient versus the same HTTPClient unpinned, in one run, against a
// keep-alive HTTPS server on loopback answering 1 KiB: 300 requests one after the other, and
// 300 with 16 in flight. Same server, same TLSConfiguration, same pool settings; the only
// difference is `configuration.pin(with: store)`. Also: how long a refused request takes to fail.

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// A counter shared across threads.
private final class SharedCount: Sendable {
    private let value = Mutex(0)
    /// Adds one and returns the value before.
    func increment() -> Int { value.withLock { old in defer { old += 1 }; return old } }
    var current: Int { value.withLock { $0 } }
}

private struct AHCBenchmarkError: Error, CustomStringConvertible {
    let description: String
}

/// Answers every request with 200 and 1 KiB, keeping the connection open.
private final class KiBResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let body = ByteBuffer(bytes: (0..<1024).map { UInt8(ascii: "a") + UInt8($0 % 26) })

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Length", value: String(Self.body.readableBytes))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(Self.body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A keep-alive HTTPS server on 127.0.0.1 presenting `chain`; counts TCP connections.
private func startKeepAliveServer(group: any EventLoopGroup, chain: String, key: String, connections: SharedCount) throws -> any Channel {
    let certificates = try NIOSSLCertificate.fromPEMFile(fixtures.appendingPathComponent(chain).path)
    let privateKey = try NIOSSLPrivateKey(file: fixtures.appendingPathComponent(key).path, format: .pem)
    let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(privateKey))
    let context = try NIOSSLContext(configuration: configuration)
    return try ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelInitializer { child in
            _ = connections.increment()
            return child.eventLoop.makeCompletedFuture {
                let pipeline = child.pipeline.syncOperations
                try pipeline.addHandler(NIOSSLServerHandler(context: context))
                try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                try pipeline.addHandler(KiBResponder())
            }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
}

/// One GET; checks the status and the body size.
private func get(_ client: HTTPClient, _ url: String) async throws {
    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 16)
    guard response.status == .ok, body.readableBytes == 1024 else {
        throw AHCBenchmarkError(description: "unexpected response \(response.status), \(body.readableBytes) bytes")
    }
}

/// `count` requests, `concurrency` in flight at a time; returns requests per second.
private func requestsPerSecond(_ client: HTTPClient, _ url: String, count: Int, concurrency: Int) async throws -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    if concurrency == 1 {
        for _ in 0..<count { try await get(client, url) }
    } else {
        let next = SharedCount()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while next.increment() < count {
                        try await get(client, url)
                    }
                }
            }
            try await group.waitForAll()
        }
    }
    let elapsed = clock.now - start
    return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

private func store(pinning certificate: String?, identifier: String) throws -> PinStore {
    var entries: [[String: Any]] = []
    if let certificate {
        let der = try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent(certificate), encoding: .utf8))[0]
        entries.append(["name": "localhost", "fingerprint": der.fingerprintBase64, "expires": 4_102_444_799])
    }
    return try PinStore(configuration: .init(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                             publicKey: try String(contentsOf: fixtures.appendingPathComponent("keys/list-signing.pub.b64"), encoding: .utf8)
                                                 .trimmingCharacters(in: .whitespacesAndNewlines),
                                             identifier: identifier,
                                             fallbackData: try JSONSerialization.data(withJSONObject: ["fingerprints": entries]),
                                             storageDirectory: scratchDirectory()),
                        fetcher: FixedFetcher(body: Data()))
}

/// Pinned versus unpinned AsyncHTTPClient, and the time a refused request takes.
func asyncHTTPClientBenchmarkRows(requests: Int = 300, samples: Int = 7) async throws -> [Row] {
    let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let connections = SharedCount()
    let server = try startKeepAliveServer(group: serverGroup, chain: "pki/localhost-dnsonly-chain.pem", key: "pki/localhost-dnsonly.key.pem", connections: connections)
    let impostor = try startKeepAliveServer(group: serverGroup, chain: "pki/attacker-dnsonly-chain.pem", key: "pki/attacker-dnsonly.key.pem", connections: SharedCount())
    guard let port = server.localAddress?.port, let impostorPort = impostor.localAddress?.port else {
        throw AHCBenchmarkError(description: "no port")
    }
    let url = "https://localhost:\(port)/"

    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(fixtures.appendingPathComponent("pki/root-ca.pem").path))
    // The same settings for both; pin(with:) turns retryConnectionEstablishment off, so the
    // baseline gets that too.
    var baselineConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
    baselineConfiguration.connectionPool.retryConnectionEstablishment = false
    var pinnedConfiguration = baselineConfiguration
    let pins = try store(pinning: "pki/localhost-dnsonly.pem", identifier: "ahc")
    try pinnedConfiguration.pin(with: pins)
    let baseline = HTTPClient(eventLoopGroupProvider: .shared(clientGroup), configuration: baselineConfiguration)
    let pinned = HTTPClient(eventLoopGroupProvider: .shared(clientGroup), configuration: pinnedConfiguration)

    // Sanity: the pinned configuration really pins (a store without the pin refuses).
    var refusingConfiguration = baselineConfiguration
    try refusingConfiguration.pin(with: try store(pinning: "pki/attacker-dnsonly.pem", identifier: "ahc-refusing"), updateOnMismatch: false)
    let refusing = HTTPClient(eventLoopGroupProvider: .shared(clientGroup), configuration: refusingConfiguration)
    if (try? await get(refusing, url)) != nil {
        throw AHCBenchmarkError(description: "a store pinning another certificate accepted the server")
    }

    // Warm-up, then interleaved samples so drift hits both sides alike.
    _ = try await requestsPerSecond(pinned, url, count: requests / 3, concurrency: 16)
    _ = try await requestsPerSecond(baseline, url, count: requests / 3, concurrency: 16)
    var rows: [Row] = []
    for concurrency in [1, 16] {
        var pinnedRates: [Double] = []
        var baselineRates: [Double] = []
        for sample in 0..<samples {
            for isPinned in (sample % 2 == 0 ? [true, false] : [false, true]) {
                let rate = try await requestsPerSecond(isPinned ? pinned : baseline, url, count: requests, concurrency: concurrency)
                if isPinned { pinnedRates.append(rate) } else { baselineRates.append(rate) }
            }
        }
        let ratio = median(pinnedRates) / median(baselineRates)
        let pairs = zip(pinnedRates, baselineRates).map { $0 / $1 }.sorted()
        rows.append(Row(name: "AsyncHTTPClient \(requests) GETs 1 KiB, \(concurrency == 1 ? "sequential" : "16 concurrent")",
                        value: String(format: "pinned %.0f req/s", median(pinnedRates)),
                        baseline: String(format: "unpinned %.0f req/s", median(baselineRates)),
                        ratio: String(format: "%.3fx (pairs %.3f-%.3f)", ratio, pairs.first ?? 0, pairs.last ?? 0),
                        target: ">= 0.95x", met: ratio >= 0.95))
    }
    // Every TLS connection the server saw, so every pin check the pinned client made (and the
    // baseline's handshakes and the sanity check's refused one).
    let totalRequests = 1 + 2 * (requests / 3) + requests * samples * 4
    rows.append(Row(name: "AsyncHTTPClient TLS connections (both clients)", value: "\(connections.current) for \(totalRequests) requests",
                    baseline: "-", ratio: "-", target: "report", met: nil))

    // How long a refused request takes: at once with pin(with:)'s setting, and with
    // AsyncHTTPClient's connection retries back on (bounded by timeout.connect, 10 s by default).
    let impostorURL = "https://localhost:\(impostorPort)/"
    let clock = ContinuousClock()
    var refusalTimes: [Double] = []
    for _ in 0..<5 {
        let start = clock.now
        _ = try? await get(pinned, impostorURL)
        let elapsed = clock.now - start
        refusalTimes.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
    }
    var retryingConfiguration = pinnedConfiguration
    retryingConfiguration.connectionPool.retryConnectionEstablishment = true
    let retrying = HTTPClient(eventLoopGroupProvider: .shared(clientGroup), configuration: retryingConfiguration)
    let retryStart = clock.now
    _ = try? await get(retrying, impostorURL)
    let retryElapsed = clock.now - retryStart
    rows.append(Row(name: "refused request (impostor), time to fail",
                    value: "pinned " + Harness.format(median(refusalTimes)),
                    baseline: String(format: "retries on: %.1f s", Double(retryElapsed.components.seconds) + Double(retryElapsed.components.attoseconds) / 1e18),
                    ratio: "-", target: "report", met: nil))

    for client in [baseline, pinned, refusing, retrying] { try await client.shutdown() }
    try await server.close()
    try await impostor.close()
    try await clientGroup.shutdownGracefully()
    try await serverGroup.shutdownGracefully()
    return rows
}
