import Foundation
import PinStore

// Issue 12, part 3: what ATS's certificate minimums (CertificateStrengthPolicy, applied by
// PinningEvaluator after chain validation) add to one pinning decision. Baseline, same run: the
// same evaluator, store, chain and pins, with the minimums lifted for the host by a
// TransportSecurityException (requiresForwardSecrecy: false). The chain is the fixture
// localhost chain (leaf, intermediate, root), already in the trust store's verified-chain cache
// after the warm-up, as on every connection after a server's first: the cheapest decision, where
// an added check weighs most.

/// `Fixtures/` of the main package: this file is Benchmarks/Sources/PinStoreBenchmarks/X.swift.
private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

private func certificates(_ path: String) throws -> [X509Certificate] {
    try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent(path), encoding: .utf8))
}

func transportSecurityBenchmarkRows(operations: Int = 20_000) throws -> [Row] {
    let chain = try certificates("pki/localhost-chain.pem").map(\.derRepresentation)
    let anchors = TrustRoots.anchors(try certificates("pki/root-ca.pem"))
    let listKey = try String(contentsOf: fixtures.appendingPathComponent("keys/list-signing.pub.b64"), encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    let fingerprint = try certificates("pki/localhost.pem")[0].fingerprintBase64
    let list = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#

    func evaluator(liftingMinimums: Bool) throws -> PinningEvaluator {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                                   publicKey: listKey, identifier: "bench-ats", fallbackData: Data(list.utf8),
                                                   storageDirectory: scratchDirectory())
        if liftingMinimums {
            configuration.transportSecurityExceptions = [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)]
        }
        let store = try PinStore(configuration: configuration, fetcher: FixedFetcher(body: Data()))
        return PinningEvaluator(store: store, trustRoots: anchors, updateOnEmpty: false, updateOnMismatch: false)
    }
    let checked = try evaluator(liftingMinimums: false)
    let lifted = try evaluator(liftingMinimums: true)
    guard checked.evaluateNow(host: "localhost", presentedChain: chain).isAllowed,
          lifted.evaluateNow(host: "localhost", presentedChain: chain).isAllowed else {
        throw PinStoreError(.invalidConfiguration, "the benchmark chain is not allowed")
    }
    let baseline = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(lifted.evaluateNow(host: "localhost", presentedChain: chain)) }
    }
    let withMinimums = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(checked.evaluateNow(host: "localhost", presentedChain: chain)) }
    }
    let ratio = withMinimums / baseline
    return [Row(name: "evaluateNow with ATS certificate minimums (3-certificate chain, cached)", value: Harness.format(withMinimums),
                baseline: Harness.format(baseline) + " (minimums lifted)", ratio: String(format: "%.2fx", ratio),
                target: "<= 1.30x", met: ratio <= 1.30)]
}
