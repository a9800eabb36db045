import Foundation
import PinStore
@_spi(Benchmarks) import PinStorePublisher
import PinStoreSigning
import PinStoreTesting
#if canImport(Glibc)
import Glibc
#endif

// Issue 31: the publisher's cost per partner probe and per published list (1,000 partners), and
// the time from a partner's rotation to a published list as a function of K, T and the probe
// interval (the publisher's own rules and schedule on an injected clock: no real waiting).

private func pemBlock(_ certificate: X509Certificate) -> String {
    "-----BEGIN CERTIFICATE-----\n" + certificate.derRepresentation.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        + "\n-----END CERTIFICATE-----\n"
}

/// CPU microseconds this process used so far (every thread).
private func processCPUMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}

/// Wall and CPU time of `body`, which runs `count` operations: per operation.
private func measure(_ count: Int, _ body: () async throws -> Void) async rethrows -> (wall: Double, cpu: Double) {
    let clock = ContinuousClock()
    let cpu = processCPUMicroseconds()
    let elapsed = try await clock.measure { try await body() }
    let wall = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    return (wall / Double(count), (processCPUMicroseconds() - cpu) * 1_000 / Double(count))
}

func publisherBenchmarkRows(partners: Int = 1_000) async throws -> [Row] {
    var rows: [Row] = []
    let pki = try TestPKI(hosts: ["partner.bench.pinstore.test"])
    let anchors = pemBlock(pki.root)

    // One probe over TLS on 127.0.0.1: handshake, chain recorded, OpenSSL validation.
    let server = try await TestHTTPSServer.start(presenting: pki.leaf)
    let probe = try PublisherBenchmarkEntryPoints.loopbackProbe(host: "partner.bench.pinstore.test", port: server.port, anchorsPEM: anchors)
    for _ in 0..<20 { _ = await probe() }
    let probes = 300
    let probed = try await measure(probes) {
        for _ in 0..<probes {
            guard await probe() else { throw BenchmarkFailure("a probe did not validate") }
        }
    }
    try await server.shutdown()
    rows.append(Row(name: "one partner probe over TLS (127.0.0.1, P-256, validated)", value: Harness.format(probed.wall),
                    baseline: "CPU \(Harness.format(probed.cpu))", ratio: "-", target: "report", met: nil))

    // 1,000 partners: every probe recorded and validated, then one published list.
    let hosts = (0..<partners).map { "p\($0).bench.pinstore.test" }
    var chains: [[Data]] = []
    for host in hosts { chains.append(try pki.issueLeaf(for: [host]).chainDER) }
    let key = try P256PrivateKey()
    let bench = try PublisherBenchmarkEntryPoints.publisher(directory: scratchDirectory(), hosts: hosts, chains: chains, anchorsPEM: anchors,
                                                            allowedCAPEM: pemBlock(pki.intermediate), signingKeyPEM: key.pkcs8PEM())
    await bench.probe()
    guard await bench.cycle() else { throw BenchmarkFailure("the first list was not published") }
    let rounds = 5
    var probeRound: [Double] = [], listRound: [Double] = [], probeCPU: [Double] = [], listCPU: [Double] = []
    for _ in 0..<rounds {
        bench.advance(seconds: 61)   // re-signing is due: every cycle signs and writes a full list
        let p = await measure(1) { await bench.probe() }
        let l = try await measure(1) { guard await bench.cycle() else { throw BenchmarkFailure("a list was not published") } }
        probeRound.append(p.wall); probeCPU.append(p.cpu); listRound.append(l.wall); listCPU.append(l.cpu)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let listBytes = (try? Data(contentsOf: bench.listURL).count) ?? 0
    rows.append(Row(name: "probe round, \(partners) partners (record + validate, no network; per partner)", value: Harness.format(median(probeRound) / Double(partners)),
                    baseline: "CPU \(Harness.format(median(probeCPU) / Double(partners)))", ratio: "-", target: "report", met: nil))
    rows.append(Row(name: "one published list, \(partners) partners (plan, sign, check, write; \(listBytes / 1024) KiB)", value: Harness.format(median(listRound)),
                    baseline: "CPU \(Harness.format(median(listCPU)))", ratio: "-", target: "report (minutes, not hours)", met: nil))
    return rows
}

/// Time from a rotation to the list that pins the new certificate, on the injected clock, for a
/// rotation just after a probe (the worst case; just before one, subtract one interval).
func rotationLatencyRows() async throws -> [Row] {
    let host = "partner.bench.pinstore.test"
    let pki = try TestPKI(hosts: [host])
    let next = try pki.issueLeaf(for: [host])
    let anchors = pemBlock(pki.root)
    var rows: [Row] = []
    for (k, t, interval) in [(1, 0, 60), (3, 1_200, 600), (3, 0, 600), (3, 1_200, 300), (5, 1_200, 300), (2, 3_600, 600), (3, 1_200, 60)] {
        let key = try P256PrivateKey()
        let bench = try PublisherBenchmarkEntryPoints.publisher(directory: scratchDirectory(), hosts: [host], chains: [pki.leaf.chainDER],
                                                                anchorsPEM: anchors, allowedCAPEM: pemBlock(pki.intermediate), signingKeyPEM: key.pkcs8PEM(),
                                                                minimumSightings: k, minimumSpan: t, probeInterval: interval)
        // The first certificate is published first (as many rounds as the rules want).
        for _ in 0..<(k + t / interval + 2) {
            bench.advance(seconds: TimeInterval(interval))
            await bench.probe()
            _ = await bench.cycle()
        }
        // Rotation one second after a probe.
        bench.advance(seconds: 1)
        let rotatedAt = bench.now
        bench.present(next.chainDER, for: host)
        bench.advance(seconds: TimeInterval(interval - 1))
        let pin = next.certificate.fingerprintBase64
        var published: Date?
        for _ in 0..<200 {
            await bench.probe()
            _ = await bench.cycle()
            if let list = try? String(contentsOf: bench.listURL, encoding: .utf8), list.contains(pin) || list.contains(pin.replacingOccurrences(of: "/", with: "\\/")) {
                published = bench.now
                break
            }
            bench.advance(seconds: TimeInterval(interval))
        }
        guard let published else { throw BenchmarkFailure("K=\(k) T=\(t)s interval=\(interval)s: never published") }
        let minutes = published.timeIntervalSince(rotatedAt) / 60
        rows.append(Row(name: "rotation to published list, K=\(k) T=\(t / 60)m probe every \(interval / 60 == 0 ? "\(interval)s" : "\(interval / 60)m")",
                        value: String(format: "%.0f min", minutes), baseline: "worst case (rotation just after a probe)", ratio: "-",
                        target: "minutes, not hours", met: minutes < 60))
    }
    return rows
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
