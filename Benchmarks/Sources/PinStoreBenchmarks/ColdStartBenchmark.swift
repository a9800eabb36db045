#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

// Issue 9: where the first request of a process goes, pinned (system trust store) against plain
// URLSession. Every sample is a fresh process (`session-phase <phase> <url>`), the phases and
// the two clients alternating, so caches warmed by one sample never help the next; each row is
// the median of the processes with their spread.
//
// A phase child measures one part on its own, cold: the rest of the first request is what the
// "pinned, parts warmed" child measures (the same parts made first, outside the timed window).

private let coldFixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// The phases a cold pinned request can be split into, each timed in a fresh process.
enum ColdPhase: String, CaseIterable {
    /// The whole first request, plain URLSession (libcurl), session creation included.
    case plain
    /// The whole first request, pinned session with `TrustRoots.system`, session creation included.
    case pinned
    /// Making the store the pinned session needs (not in `pinned`: an app has its store already).
    case store
    /// `MultiThreadedEventLoopGroup.singleton` started and one task run on it.
    case eventLoopGroup = "elg"
    /// The transport's `NIOSSLContext` (BoringSSL inside swift-nio-ssl, no trust material).
    case sslContext = "sslctx"
    /// The first `ChainValidator` verification of the fixture chain against `TrustRoots.system`.
    case systemVerify = "system-verify"
    /// The same verification against the root alone: no system store to read.
    case anchorVerify = "anchor-verify"
    /// `URLSession(configuration: .default)` made and one in-memory `URLProtocol` request run
    /// through it: FoundationNetworking's own setup, with no network.
    case urlSession = "urlsession"
    /// The pinned first request after the event loops, a TLS context and the system store were
    /// made outside the timed window: the handshake, the pin check and the URLSession path.
    case pinnedWarmedParts = "pinned-warmed"

    var label: String {
        switch self {
        case .plain: "plain URLSession, whole first request"
        case .pinned: "pinned URLSession (TrustRoots.system), whole first request"
        case .store: "PinStore(configuration:) with a fallback list (before the request)"
        case .eventLoopGroup: "NIO event loop group start"
        case .sslContext: "NIOSSLContext creation"
        case .systemVerify: "first chain verification, TrustRoots.system"
        case .anchorVerify: "first chain verification, the root as anchor (no system store)"
        case .urlSession: "URLSession setup + one in-memory URLProtocol request"
        case .pinnedWarmedParts: "pinned first request, ELG/TLS context/system store made before"
        }
    }
}

/// Answers every request from memory: FoundationNetworking's URLProtocol path with no network.
final class MemoryURLProtocol: URLProtocol {
    static let body = Data(repeating: 0x61, count: 1024)

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url,
              let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                             headerFields: ["Content-Length": "1024"]) else { return }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Self.body)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}

    /// A session whose every request this protocol answers: FoundationNetworking's own cost
    /// of a request, with no cache (as a pinned configuration has none; `.default`'s URLCache
    /// would add its lookup to every request).
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.protocolClasses = [MemoryURLProtocol.self]
        return URLSession(configuration: configuration)
    }
}

private func localhostChain() throws -> [Data] {
    try X509Certificate.certificates(pem: String(contentsOf: coldFixtures.appendingPathComponent("pki/localhost-chain.pem"), encoding: .utf8))
        .map(\.derRepresentation)
}

private func pinnedTransportTLS() -> TLSConfiguration {
    // As PinnedHTTPSTransport makes it.
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.applicationProtocols = ["h2", "http/1.1"]
    tls.trustRoots = .certificates([])
    return tls
}

/// Child: times one phase cold, prints microseconds.
func coldPhaseChild(_ name: String, _ url: URL) async throws {
    guard let phase = ColdPhase(rawValue: name) else { throw PinnedSessionBenchmarkError.setup("unknown phase \(name)") }
    let clock = ContinuousClock()
    var store: PinStore?
    if phase == .pinned || phase == .pinnedWarmedParts { store = try pinnedBenchmarkStore() }
    if phase == .pinnedWarmedParts {
        try await MultiThreadedEventLoopGroup.singleton.next().submit {}.get()
        _ = try NIOSSLContext(configuration: pinnedTransportTLS())
        _ = try ChainValidator(trustRoots: .system).validate(chain: localhostChain(), hostname: "localhost")
    }
    let chain = phase == .systemVerify || phase == .anchorVerify ? try localhostChain() : []
    let anchor = phase == .anchorVerify
        ? try X509Certificate.certificates(pem: String(contentsOf: coldFixtures.appendingPathComponent("pki/root-ca.pem"), encoding: .utf8)) : []
    let started = clock.now
    switch phase {
    case .plain:
        let (data, _) = try await URLSession(configuration: .default).data(from: url)
        guard data.count == 1024 else { throw PinnedSessionBenchmarkError.setup("short body") }
    case .pinned, .pinnedWarmedParts:
        guard let store else { return }
        let (data, _) = try await URLSession(configuration: .pinned(by: store, trustRoots: .system)).data(from: url)
        guard data.count == 1024 else { throw PinnedSessionBenchmarkError.setup("short body") }
    case .store:
        store = try pinnedBenchmarkStore()
    case .eventLoopGroup:
        try await MultiThreadedEventLoopGroup.singleton.next().submit {}.get()
    case .sslContext:
        _ = try NIOSSLContext(configuration: pinnedTransportTLS())
    case .systemVerify:
        _ = try ChainValidator(trustRoots: .system).validate(chain: chain, hostname: "localhost")
    case .anchorVerify:
        _ = try ChainValidator(trustRoots: .anchors(anchor)).validate(chain: chain, hostname: "localhost")
    case .urlSession:
        let (data, _) = try await MemoryURLProtocol.session().data(from: url)
        guard data.count == 1024 else { throw PinnedSessionBenchmarkError.setup("short body") }
    }
    let elapsed = clock.now - started
    withExtendedLifetime(store) {}
    print(elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000)
}

/// Runs one phase child; its microseconds, or nil when it failed.
private func coldSample(_ phase: ColdPhase, _ url: URL) -> Int? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["session-phase", phase.rawValue, url.absoluteString]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return Int(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Median and spread (min-max) of cold samples, milliseconds.
struct ColdFigure {
    let samples: [Double]
    var median: Double { samples.sorted()[samples.count / 2] }
    var text: String {
        let sorted = samples.sorted()
        return String(format: "%.1f ms (%.1f-%.1f, n=%d)", median, sorted.first ?? 0, sorted.last ?? 0, samples.count)
    }
}

/// Every phase in `processes` fresh processes each, all phases interleaved round by round.
func coldPhaseFigures(_ url: URL, processes: Int, phases: [ColdPhase] = ColdPhase.allCases) -> [ColdPhase: ColdFigure] {
    var samples: [ColdPhase: [Double]] = [:]
    for round in 0..<processes {
        // Alternate the order too, so neither client always runs right after the other.
        for phase in round % 2 == 0 ? phases : phases.reversed() {
            if let micros = coldSample(phase, url) { samples[phase, default: []].append(Double(micros) / 1000) }
        }
    }
    return samples.compactMapValues { $0.isEmpty ? nil : ColdFigure(samples: $0) }
}

/// The first-request rows: the ratio row, then one report row per phase; then the pinned
/// request and the system verification again with the root in the bundle only (the directory
/// lookup misses, the bundle is parsed: what every first request paid before the lookup).
func coldStartRows(_ url: URL, processes: Int, trust: SystemTrustForBenchmark) -> [Row] {
    progress("cold: \(processes) processes per phase")
    let figures = coldPhaseFigures(url, processes: processes)
    progress("cold, root in the bundle only")
    let bundleOnly = trust.withRootInBundleOnly {
        coldPhaseFigures(url, processes: processes, phases: [.plain, .pinned, .systemVerify])
    }
    var rows: [Row] = []
    if let pinned = figures[.pinned], let plain = figures[.plain] {
        rows.append(Row(name: "first request of a process, system trust store", value: "pinned " + pinned.text,
                        baseline: "plain URLSession " + plain.text, ratio: String(format: "%.2fx", pinned.median / plain.median),
                        target: "<= 1.0x", met: pinned.median <= plain.median))
    }
    for phase in ColdPhase.allCases where phase != .pinned && phase != .plain {
        guard let figure = figures[phase] else { continue }
        rows.append(Row(name: "  cold phase: " + phase.label, value: figure.text, baseline: "-", ratio: "-", target: "report", met: nil))
    }
    if let pinned = bundleOnly[.pinned], let plain = bundleOnly[.plain] {
        rows.append(Row(name: "first request, test root in the bundle only (bundle parsed)", value: "pinned " + pinned.text,
                        baseline: "plain URLSession " + plain.text, ratio: String(format: "%.2fx", pinned.median / plain.median),
                        target: "report", met: nil))
    }
    if let verify = bundleOnly[.systemVerify] {
        rows.append(Row(name: "  cold phase: " + ColdPhase.systemVerify.label + ", root in the bundle only", value: verify.text,
                        baseline: "-", ratio: "-", target: "report", met: nil))
    }
    return rows
}
#endif

#if canImport(FoundationNetworking)
/// `session-first`: the first-request rows alone, against nginx with the test root installed.
func firstRequestBenchmarkRows(processes: Int) async throws -> [Row] {
    let nginx = try LoopbackNginx.start()
    defer { nginx.stop() }
    let trust = try SystemTrustForBenchmark()
    defer { trust.restore() }
    return coldStartRows(URL(string: "https://localhost:\(nginx.port)/small")!, processes: processes, trust: trust)
}
#endif
