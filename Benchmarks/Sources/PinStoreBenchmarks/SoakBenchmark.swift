import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreNIO
import PinStoreTesting

// Issue 37: what a long-lived process keeps. Each part runs for many requests (or updates, or
// handshakes) in a child process of its own, so that nothing another client allocated counts,
// and reports resident memory (VmRSS) after a warm-up, part-way, and at the end, as bytes per
// operation, beside a baseline client measured in the same run:
//
//   swift run -c release --package-path Benchmarks soak [REQUESTS]     pinned URLSession vs AsyncHTTPClient (nginx)
//   swift run -c release --package-path Benchmarks soak-handshakes [N] the NIO verifier vs swift-nio-ssl alone
//   swift run -c release --package-path Benchmarks soak-store [SECONDS] a store under run(), a new list every second
//
// The per-operation figure is the growth between the part-way sample and the end, divided by
// the operations in between: by then the allocator's arenas and the connection pools are
// warm, so what is left is what each operation keeps.

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// Resident bytes of a child at its samples: after the warm-up, part-way, at the end.
struct SoakSamples {
    var afterWarmUp: Int
    var partWay: Int
    var atEnd: Int
    /// Operations between the part-way sample and the end.
    var operationsBetween: Int

    var bytesPerOperation: Double {
        Double(atEnd - partWay) / Double(max(operationsBetween, 1))
    }

    static func parse(_ output: String) -> SoakSamples? {
        let numbers = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard numbers.count == 4 else { return nil }
        return SoakSamples(afterWarmUp: numbers[0], partWay: numbers[1], atEnd: numbers[2], operationsBetween: numbers[3])
    }

    /// What the child prints for its parent.
    func emit() {
        print(afterWarmUp, partWay, atEnd, operationsBetween)
    }
}

private func mebibytes(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
}

/// Runs this executable with `arguments` and reads its samples; nil (and the child's output on
/// standard error) when it failed.
private func soakChild(_ arguments: [String]) -> SoakSamples? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0, let samples = SoakSamples.parse(output) else {
        FileHandle.standardError.write(Data("soak child \(arguments) failed (status \(process.terminationStatus)): \(output)\n".utf8))
        return nil
    }
    return samples
}

// MARK: - Requests: pinned URLSession beside AsyncHTTPClient

#if canImport(FoundationNetworking)
/// `soak [REQUESTS]`: nginx on loopback; each client in its own child process makes 2,000
/// warm-up requests, then REQUESTS more (16 at a time, each with its own query string); resident
/// memory after the warm-up, after 20,000 and at the end.
func soakRequestRows(requests: Int) throws -> [Row] {
    let nginx = try LoopbackNginx.start()
    defer { nginx.stop() }
    let clients = [("pinned URLSession", "pinned"), ("AsyncHTTPClient", "ahc"), ("pinned AsyncHTTPClient", "pinned-ahc")]
    var samples: [String: SoakSamples] = [:]
    for (name, client) in clients {
        progress("soak: \(name), \(requests) requests")
        samples[client] = soakChild(["soak-requests", client, String(nginx.port), String(requests)])
    }
    guard let ahc = samples["ahc"] else { throw PinnedSessionBenchmarkError.setup("the AsyncHTTPClient baseline did not run") }
    var rows: [Row] = []
    for (name, client) in clients {
        guard let figures = samples[client] else { continue }
        let extra = figures.bytesPerOperation - ahc.bytesPerOperation
        rows.append(Row(name: "\(name), resident after 2,000 / 20,000 / \(requests) GETs",
                        value: "\(mebibytes(figures.afterWarmUp)) / \(mebibytes(figures.partWay)) / \(mebibytes(figures.atEnd))",
                        baseline: "AsyncHTTPClient \(mebibytes(ahc.afterWarmUp)) / \(mebibytes(ahc.partWay)) / \(mebibytes(ahc.atEnd))",
                        ratio: "-", target: "report", met: nil))
        rows.append(Row(name: "  \(name), bytes kept per request (20,000 -> \(requests))",
                        value: String(format: "%.1f B", figures.bytesPerOperation),
                        baseline: String(format: "AsyncHTTPClient %.1f B", ahc.bytesPerOperation),
                        ratio: String(format: "%+.1f B", extra),
                        target: client == "ahc" ? "-" : "<= +256 B", met: client == "ahc" ? nil : extra <= 256))
    }
    return rows
}

/// Child of `soak`: one client's requests, then its samples on standard output.
func soakRequestsChild(client name: String, port: Int, requests: Int) async throws {
    let root = fixtures.appendingPathComponent("pki/root-ca.pem")
    let store = try pinnedBenchmarkStore()
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(root.path))
    var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
    configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
    configuration.httpVersion = .http1Only
    var ahc: HTTPClient?
    let client: BenchClient
    switch name {
    case "pinned":
        let base = URLSessionConfiguration.default
        base.httpMaximumConnectionsPerHost = 16
        let roots = TrustRoots.anchors(try X509Certificate.certificates(pem: String(contentsOf: root, encoding: .utf8)))
        client = .session(URLSession(configuration: .pinned(by: store, trustRoots: roots, basedOn: base)))
    case "pinned-ahc":
        try configuration.pin(with: store)
        fallthrough
    default:
        let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        ahc = made
        client = .asyncHTTPClient(made)
    }
    let counter = BenchBox(0)
    /// GETs `count` distinct URLs, 16 at a time.
    func get(_ count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            let next = BenchBox(0)
            for _ in 0..<16 {
                group.addTask {
                    while next.withLock({ value -> Bool in value += 1; return value <= count }) {
                        let index = counter.withLock { value -> Int in value += 1; return value }
                        let size = try await client.get(URL(string: "https://localhost:\(port)/small?request=\(index)")!)
                        guard size == 1024 else { throw PinnedSessionBenchmarkError.setup("short body: \(size)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
    try await get(2_000)
    let afterWarmUp = currentResidentBytes()
    let partWayCount = min(20_000, requests)
    try await get(partWayCount)
    let partWay = currentResidentBytes()
    try await get(requests - partWayCount)
    let atEnd = currentResidentBytes()
    try await ahc?.shutdown()
    SoakSamples(afterWarmUp: afterWarmUp, partWay: partWay, atEnd: atEnd, operationsBetween: requests - partWayCount).emit()
}

#endif

// MARK: - Handshakes: the NIO verifier beside swift-nio-ssl's own verification

/// `soak-handshakes [N]`: N full handshakes (each with one request) through the pinned NIO
/// verifier, and as many through swift-nio-ssl's verification alone, each in a child process.
func soakHandshakeRows(handshakes: Int) -> [Row] {
    progress("soak: \(handshakes) pinned handshakes")
    let pinned = soakChild(["soak-handshakes-child", "pinned", String(handshakes)])
    progress("soak: \(handshakes) baseline handshakes")
    let baseline = soakChild(["soak-handshakes-child", "baseline", String(handshakes)])
    guard let pinned, let baseline else { return [] }
    let extra = pinned.bytesPerOperation - baseline.bytesPerOperation
    return [
        Row(name: "NIO verifier, resident after 1,000 / 10,000 / \(handshakes) handshakes",
            value: "\(mebibytes(pinned.afterWarmUp)) / \(mebibytes(pinned.partWay)) / \(mebibytes(pinned.atEnd))",
            baseline: "swift-nio-ssl alone \(mebibytes(baseline.afterWarmUp)) / \(mebibytes(baseline.partWay)) / \(mebibytes(baseline.atEnd))",
            ratio: "-", target: "report", met: nil),
        Row(name: "  NIO verifier, bytes kept per handshake (10,000 -> \(handshakes))",
            value: String(format: "%.1f B", pinned.bytesPerOperation),
            baseline: String(format: "swift-nio-ssl alone %.1f B", baseline.bytesPerOperation),
            ratio: String(format: "%+.1f B", extra), target: "<= +256 B", met: extra <= 256),
    ]
}

// MARK: - A store under run(), a new list every second

/// `soak-store [SECONDS]`: a store under `run()` with `periodicUpdateInterval` 1 s against a
/// loopback list server that publishes a new signed list (new timestamp, 200 entries) every
/// second, in a child process.
func soakStoreRows(seconds: Int) -> [Row] {
    progress("soak: a store updated every second for \(seconds) s")
    guard let samples = soakChild(["soak-store-child", String(seconds)]) else { return [] }
    return [
        Row(name: "store under run(), resident after 30 s / 60 s / \(seconds) s of updates every second",
            value: "\(mebibytes(samples.afterWarmUp)) / \(mebibytes(samples.partWay)) / \(mebibytes(samples.atEnd))",
            baseline: "-", ratio: "-", target: "report", met: nil),
        Row(name: "  store under run(), bytes kept per installed list (60 s -> \(seconds) s)",
            value: String(format: "%.1f B (%d lists installed)", samples.bytesPerOperation, samples.operationsBetween),
            // A report, not a target: three samples of a 10-minute run cannot tell a slow leak
            // from the allocator settling, and real lists change hours apart, not every second.
            baseline: "-", ratio: "-", target: "report", met: nil),
    ]
}

/// Child of `soak-store`.
func soakStoreChild(seconds: Int) async throws {
    let pki = try TestPKI(hosts: ["localhost"])
    let key = try TestListSigningKey()
    func list(_ round: Int) -> TestPinList {
        // 200 entries, the fingerprints changing every round (a list that really changes).
        var entries = (0..<199).map { index in
            FingerprintEntry(name: "host-\(index).soak.pinstore.test",
                             fingerprint: SHA256Digest.hash(Data("\(round)-\(index)".utf8)), expires: 4_102_444_799)
        }
        entries.append(FingerprintEntry(name: "localhost", fingerprint: pki.leaf.certificate.fingerprint, expires: 4_102_444_799))
        return TestPinList(entries: entries)
    }
    let server = try await TestListServer.start(serving: list(0), signedWith: key)
    var configuration = PinStore.Configuration(serviceURL: server.listURL, publicKey: key.publicKeyBase64,
                                               identifier: "soak", storageDirectory: scratchDirectory())
    configuration.periodicUpdateInterval = 1
    configuration.requireListSignature = true
    let store = try PinStore(configuration: configuration)
    let running = Task { try await store.run() }
    let clock = ContinuousClock()
    let start = clock.now
    var round = 0
    var samples: [Int] = []
    var roundsInForce: [Int] = []
    /// The round of the list in force, read from its first entry's fingerprint.
    func roundInForce() -> Int {
        guard let first = store.storedEntries.first(where: { $0.name == "host-0.soak.pinstore.test" }) else { return 0 }
        return (0...round).last { SHA256Digest.hash(Data("\($0)-0".utf8)) == first.fingerprint } ?? 0
    }
    for mark in [30, 60, seconds] {
        while clock.now - start < .seconds(mark) {
            round += 1
            try server.publish(list(round))
            try await Task.sleep(for: .seconds(1))
        }
        samples.append(currentResidentBytes())
        roundsInForce.append(roundInForce())
    }
    running.cancel()
    _ = try? await running.value
    try await server.shutdown()
    // Sanity: the pins in force are a list the server published (the store really updates).
    guard store.matchPins(commonName: "localhost", fingerprint: pki.leaf.certificate.fingerprint) == .trusted else {
        throw PinnedSessionBenchmarkError.setup("the store does not trust the published localhost pin")
    }
    SoakSamples(afterWarmUp: samples[0], partWay: samples[1], atEnd: samples[2],
                operationsBetween: roundsInForce[2] - roundsInForce[1]).emit()
}
