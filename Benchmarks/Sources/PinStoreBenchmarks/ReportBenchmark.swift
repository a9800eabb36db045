import Foundation
import PinStore

// Issue 12, pin-failure reports: what a configured reportURI adds to a refused connection's
// decision (the report itself is built and sent off the connection's thread). Baseline: the
// same refusal by a store without a reportURI, measured in the same run.
//   swift run -c release --package-path Benchmarks reports

func reportBenchmarkRows() throws -> [Row] {
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/pki")
    func pem(_ name: String) throws -> [X509Certificate] {
        try X509Certificate.certificates(pem: String(decoding: Data(contentsOf: fixtures.appendingPathComponent(name)), as: UTF8.self))
    }
    let attacker = try pem("attacker-chain.pem").map(\.derRepresentation)
    let anchors = TrustRoots.anchors(try pem("root-ca.pem"))
    let leaf = try pem("localhost.pem")[0]
    let key = try P256PrivateKey().publicKey.x963Representation.base64EncodedString()
    let list = try listJSON([FingerprintEntry(name: "localhost", fingerprint: leaf.fingerprint, expires: 4_102_444_799)])
    func evaluator(reportURI: URL?) throws -> PinningEvaluator {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                                   publicKey: key, identifier: "bench", fallbackData: list,
                                                   storageDirectory: scratchDirectory())
        configuration.reportURI = reportURI
        return PinningEvaluator(store: try PinStore(configuration: configuration, fetcher: FixedFetcher(body: Data())),
                                trustRoots: anchors, updateOnEmpty: false, updateOnMismatch: false)
    }
    // A collector that is down (port 9, discard, closed on loopback): deliveries fail at once,
    // so the flood below runs into the queue bound, the worst case for the connection's thread.
    let collector = URL(string: "http://127.0.0.1:9/pin-reports")!
    let plain = try evaluator(reportURI: nil)
    let reporting = try evaluator(reportURI: collector)
    let decisions = 500
    let baseline = Harness.nanosecondsPerOperation(operations: decisions) {
        for port in 0..<decisions { Harness.consume(plain.evaluateNow(host: "localhost", port: port, presentedChain: attacker)) }
    }
    // The same failure again and again: coalesced with the one waiting, or rate-limited.
    let repeated = Harness.nanosecondsPerOperation(operations: decisions) {
        for _ in 0..<decisions { Harness.consume(reporting.evaluateNow(host: "localhost", port: 443, presentedChain: attacker)) }
    }
    // A distinct failure every time (another port): queued until the queue is full, then dropped.
    var nextPort = 1_000
    let distinct = Harness.nanosecondsPerOperation(operations: decisions) {
        for _ in 0..<decisions {
            nextPort += 1
            Harness.consume(reporting.evaluateNow(host: "localhost", port: nextPort, presentedChain: attacker))
        }
    }
    return [
        Row(name: "refused connection, reportURI set (same failure)", value: Harness.format(repeated),
            baseline: "no reportURI \(Harness.format(baseline))", ratio: String(format: "%.2fx", repeated / baseline),
            target: "< 1.1x", met: repeated / baseline < 1.1),
        Row(name: "refused connection, reportURI set (distinct failures)", value: Harness.format(distinct),
            baseline: "no reportURI \(Harness.format(baseline))", ratio: String(format: "%.2fx", distinct / baseline),
            target: "< 1.1x", met: distinct / baseline < 1.1),
    ]
}
