import Foundation
@_spi(Benchmarks) import PinStore
import PinStoreTesting

// Issue 34: what the CRL check adds to the pin rules. A pooled re-check reads a cached verdict
// (target for a whole request: <= 1.02x; the row reports the decision alone, a strict upper
// bound of that ratio), and a new chain is looked up in a cached CRL of 10,000 entries (report:
// OpenSSL reads the chain's distribution points and serials once per certificate).

/// The CRL rows: a pooled re-check with and without the CRL check, and a new chain against a
/// 10,000-entry CRL.
func crlBenchmarkRows(operations: Int = 10_000) throws -> [Row] {
    let base = try require(URL(string: "http://127.0.0.1:9/crls"))
    let pki = try TestPKI(hosts: ["crl.bench.pinstore.test"], crlBaseURL: base)
    let chain = [pki.leaf.certificate.derRepresentation, pki.intermediate.derRepresentation, pki.root.derRepresentation]
    let crls = [(url: pki.intermediateCRLURL!.absoluteString, der: try pki.crl(by: .intermediate, otherEntries: 10_000),
                 issuer: pki.intermediate.derRepresentation),
                (url: pki.rootCRLURL!.absoluteString, der: try pki.crl(by: .root), issuer: pki.root.derRepresentation)]
    let plain = try BenchmarkEntryPoints.crlPinDecision(host: "crl.bench.pinstore.test", chain: chain, crls: nil, newChain: false)
    let pooled = try BenchmarkEntryPoints.crlPinDecision(host: "crl.bench.pinstore.test", chain: chain, crls: crls, newChain: false)
    let fresh = try BenchmarkEntryPoints.crlPinDecision(host: "crl.bench.pinstore.test", chain: chain, crls: crls, newChain: true)
    guard plain(), pooled(), fresh() else { throw BenchmarkError("the benchmark chain is not allowed") }
    var without: [Double] = []
    var with: [Double] = []
    var new: [Double] = []
    for _ in 0..<5 {
        without.append(Harness.nanosecondsPerOperation(operations: operations, samples: 3) {
            for _ in 0..<operations { Harness.consume(plain()) }
        })
        with.append(Harness.nanosecondsPerOperation(operations: operations, samples: 3) {
            for _ in 0..<operations { Harness.consume(pooled()) }
        })
        new.append(Harness.nanosecondsPerOperation(operations: operations / 20, samples: 3) {
            for _ in 0..<(operations / 20) { Harness.consume(fresh()) }
        })
    }
    let median = { (values: [Double]) in values.sorted()[values.count / 2] }
    let (b, c, n) = (median(without), median(with), median(new))
    return [
        Row(name: "pooled re-check, cached CRL (decision alone; +\(Harness.format(max(0, c - b))))", value: Harness.format(c),
            baseline: "same decision, CRL off \(Harness.format(b))", ratio: String(format: "%.2fx", c / b),
            target: "report (request: <= 1.02x)", met: nil),
        Row(name: "new chain, cached CRL of 10,000 entries", value: Harness.format(n),
            baseline: "CRL off \(Harness.format(b))", ratio: String(format: "%.2fx", n / b), target: "report", met: nil),
    ]
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw BenchmarkError("a benchmark URL could not be made") }
    return value
}
