import Foundation
@_spi(Benchmarks) import PinStore
import PinStoreTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
import PinStoreNIO
#endif

// Issue 34: what the CRL check adds. Three parts:
// - the decision alone (below): a pooled re-check reads a cached verdict, and a new chain is
//   looked up in a cached CRL of 10,000 entries (report: OpenSSL reads the chain's distribution
//   points and serials once per certificate);
// - a whole pooled request through the pinned URLSession (target <= 1.02x of the same request
//   with the CRL check off): instructions per request under callgrind, the robust figure on a
//   busy 2-core machine, and requests/s as a second row;
// - the first request of a new store with a cold CRL cache, which fetches and verifies the
//   CRLs from a loopback CRL server (report), beside the first request of a CRL-off store.

/// Every CRL row (`PinStoreBenchmarks crl [SMALL LARGE]`, and the full run): the decision
/// alone, then, where FoundationNetworking is, whole requests through the pinned URLSession.
/// The callgrind row needs valgrind; without it that row is left out and a line says so.
func crlBenchmarkRows(small: Int = 100, large: Int = 1_000) throws -> [Row] {
    var rows = try crlDecisionRows()
#if canImport(FoundationNetworking)
    rows += try crlRequestRows(small: small, large: large)
#endif
    return rows
}

/// The decision alone: a pooled re-check with and without the CRL check, and a new chain against
/// a 10,000-entry CRL.
func crlDecisionRows(operations: Int = 10_000) throws -> [Row] {
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
            target: "report (request row below)", met: nil),
        Row(name: "new chain, cached CRL of 10,000 entries", value: Harness.format(n),
            baseline: "CRL off \(Harness.format(b))", ratio: String(format: "%.2fx", n / b), target: "report", met: nil),
    ]
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw BenchmarkError("a benchmark URL could not be made") }
    return value
}

#if canImport(FoundationNetworking)
// MARK: - Whole requests through the pinned URLSession

/// What a CRL benchmark store needs to reach the servers of a ``CRLBenchmarkWorld``: written to
/// a file for the callgrind children, which build their stores from it alone.
struct CRLBenchmarkSettings: Codable {
    /// The HTTPS server presenting the good leaf (`https://localhost:PORT/`).
    var port: Int
    /// The HTTPS server presenting a leaf the intermediate's CRL lists.
    var revokedPort: Int
    var listURL: URL
    var publicKey: String
    /// The test root (DER), the only anchor.
    var root: Data

    var url: URL { URL(string: "https://localhost:\(port)/")! }
    var revokedURL: URL { URL(string: "https://localhost:\(revokedPort)/")! }
    static let bodySize = TestHTTPSServer.responseBody.utf8.count
}

/// The servers, all on 127.0.0.1 and run by the parent process (outside valgrind): a CRL server,
/// a signed list pinning both leaves, and an HTTPS server per leaf. The test CA's certificates
/// name the CRL server as their distribution point; the intermediate's CRL lists the revoked
/// leaf and 10,000 other serials (a large CA's CRL), the root's lists nothing.
struct CRLBenchmarkWorld {
    let crls: TestCRLServer
    let lists: TestListServer
    let good: TestHTTPSServer
    let revoked: TestHTTPSServer
    let settings: CRLBenchmarkSettings

    static func start() async throws -> CRLBenchmarkWorld {
        let crls = try await TestCRLServer.start()
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        let revokedLeaf = try pki.issueLeaf(for: ["localhost"])
        crls.serve(.crl(try pki.crl(by: .intermediate, revoking: [revokedLeaf.certificate], otherEntries: 10_000)), at: "intermediate.crl")
        crls.serve(.crl(try pki.crl(by: .root)), at: "root.crl")
        let key = try TestListSigningKey()
        let lists = try await TestListServer.start(serving: TestPinList(pinning: [pki.leaf.certificate, revokedLeaf.certificate]), signedWith: key)
        let good = try await TestHTTPSServer.start(presenting: pki.leaf)
        let revoked = try await TestHTTPSServer.start(presenting: revokedLeaf)
        return CRLBenchmarkWorld(crls: crls, lists: lists, good: good, revoked: revoked,
                                 settings: CRLBenchmarkSettings(port: good.port, revokedPort: revoked.port, listURL: lists.listURL,
                                                                publicKey: key.publicKeyBase64, root: pki.root.derRepresentation))
    }

    /// CRL downloads so far (both distribution points).
    var crlFetches: Int { crls.requestCount(for: "intermediate.crl") + crls.requestCount(for: "root.crl") }

    func shutdown() async {
        for server in [good, revoked] { try? await server.shutdown() }
        try? await lists.shutdown()
        try? await crls.shutdown()
    }
}

/// A store of the benchmark world with the list downloaded and verified, in a new storage folder
/// (so its CRL cache starts cold). The enforce and off stores differ in `crlMode` alone; the
/// fetch budget is the largest allowed, so that a first fetch under valgrind is waited for.
func crlBenchmarkStore(_ settings: CRLBenchmarkSettings, mode: CRLCheckMode) async throws -> PinStore {
    var configuration = PinStore.Configuration(serviceURL: settings.listURL, publicKey: settings.publicKey, storageDirectory: scratchDirectory())
    configuration.requireListSignature = true
    configuration.crlMode = mode
    configuration.crlFetchBudget = 30
    let store = try PinStore(configuration: configuration)
    guard await store.update() == .ok else { throw BenchmarkError("the benchmark store could not download its list") }
    return store
}

/// A pinned URLSession on `store` trusting only the test root; no response cache, so every GET
/// reaches the server.
func crlBenchmarkSession(_ store: PinStore, _ settings: CRLBenchmarkSettings) throws -> URLSession {
    let base = URLSessionConfiguration.ephemeral
    base.requestCachePolicy = .reloadIgnoringLocalCacheData
    base.timeoutIntervalForRequest = 60
    let roots = TrustRoots.anchors([try X509Certificate(derRepresentation: settings.root)])
    return URLSession(configuration: .pinned(by: store, trustRoots: roots, updateOnMismatch: false, basedOn: base))
}

/// The whole-request rows: instructions per pooled GET under callgrind (the target row), the
/// same GETs' requests/s, and the first request of a new store (cold CRL cache).
func crlRequestRows(small: Int, large: Int, rounds: Int = 9) throws -> [Row] {
    let world = try blocking { try await CRLBenchmarkWorld.start() }
    defer { _ = try? blocking { await world.shutdown() } }
    var rows: [Row] = []
    do {
        rows += try crlInstructionRows(world, small: small, large: large)
    } catch let error as PinnedSessionBenchmarkError {
        print("CRL callgrind row skipped: \(error)")
    }
    rows += try blocking { try await crlWallTimeRows(world, rounds: rounds) }
    return rows
}

/// Instructions per pooled GET, CRL enforce (cached verdict) against CRL off: each mode runs
/// `crl-profile` under callgrind with `small` and `large` GETs after the same warm-up, and the
/// difference divided by `large - small` is one request (start-up, list download, handshake
/// and CRL fetch cancel out). The servers run here, outside valgrind.
private func crlInstructionRows(_ world: CRLBenchmarkWorld, small: Int, large: Int) throws -> [Row] {
    let callgrind = try Callgrind()
    let settings = callgrind.directory.appendingPathComponent("crl-settings.json")
    try JSONEncoder().encode(world.settings).write(to: settings)
    var perRequest: [CRLCheckMode: CallgrindCounts] = [:]
    for mode in [CRLCheckMode.enforceSoftFail, .off] {
        let fetches = world.crlFetches
        perRequest[mode] = try callgrind.perRequest(small: small, large: large, label: "crl-\(mode)") { requests in
            ["crl-profile", String(requests), mode == .off ? "off" : "enforce", settings.path]
        }
        // Each enforcing child (a new storage folder) fetched the CRLs once; an off child, never.
        let expected = mode == .off ? 0 : 2 * 2
        guard world.crlFetches - fetches == expected else {
            throw BenchmarkError("\(mode) children fetched \(world.crlFetches - fetches) CRLs, not \(expected)")
        }
    }
    guard let on = perRequest[.enforceSoftFail], let off = perRequest[.off] else { return [] }
    let ratio = Double(on.instructions) / Double(off.instructions)
    func thousands(_ value: Int) -> String { String(format: "%.1f k", Double(value) / 1_000) }
    return [
        Row(name: "pooled GET, CRL enforce, cached verdict: instructions (callgrind)", value: thousands(on.instructions),
            baseline: "CRL off \(thousands(off.instructions)) (\(on.allocations) vs \(off.allocations) mallocs)",
            ratio: String(format: "%.3fx", ratio), target: "<= 1.02x", met: ratio <= 1.02),
    ]
}

/// The child under callgrind: a store in `mode` on the world in `settings`, a pinned session,
/// 100 GETs (the handshake, and under enforce the CRL fetch), then `requests` more on the kept
/// connection.
func crlSessionProfile(requests: Int, mode: String, settings file: URL) async throws {
    let settings = try JSONDecoder().decode(CRLBenchmarkSettings.self, from: Data(contentsOf: file))
    let store = try await crlBenchmarkStore(settings, mode: mode == "off" ? .off : .enforceSoftFail)
    let session = try crlBenchmarkSession(store, settings)
    _ = try await runRequests(.session(session), settings.url, count: 100, concurrency: 1, expectedSize: CRLBenchmarkSettings.bodySize)
    _ = try await runRequests(.session(session), settings.url, count: requests, concurrency: 1, expectedSize: CRLBenchmarkSettings.bodySize)
    session.finishTasksAndInvalidate()
}

/// Requests/s of pooled GETs (enforce against off, rounds interleaved), and the first request
/// of new stores: enforce with a cold CRL cache against off.
private func crlWallTimeRows(_ world: CRLBenchmarkWorld, rounds: Int) async throws -> [Row] {
    let settings = world.settings
    let enforcing = try await crlBenchmarkStore(settings, mode: .enforceSoftFail)
    let off = try await crlBenchmarkStore(settings, mode: .off)
    let on = try crlBenchmarkSession(enforcing, settings)
    let plain = try crlBenchmarkSession(off, settings)
    defer {
        on.finishTasksAndInvalidate()
        plain.finishTasksAndInvalidate()
    }
    // What is measured is a real check: the enforcing session refuses the revoked leaf, the
    // other one takes it.
    guard (try? await on.data(from: settings.revokedURL)) == nil, (try? await plain.data(from: settings.revokedURL)) != nil else {
        throw BenchmarkError("the enforcing session did not refuse the revoked leaf, or the CRL-off one did")
    }
    let size = CRLBenchmarkSettings.bodySize
    for session in [on, plain] { _ = try await runRequests(.session(session), settings.url, count: 50, concurrency: 1, expectedSize: size) }
    let fetches = world.crlFetches
    let served = world.good.requestCount
    progress("CRL: pooled GETs, \(rounds) rounds")
    let count = 300
    let runs = try await medianRuns([.session(on), .session(plain)], settings.url, count: count, concurrency: 1, rounds: rounds, expectedSize: size)
    guard world.crlFetches == fetches, world.good.requestCount - served == 2 * rounds * count else {
        throw BenchmarkError("the pooled GETs fetched CRLs again or did not all reach the server")
    }
    let (enforceRate, offRate) = (runs[0].median.requestsPerSecond, runs[1].median.requestsPerSecond)

    // First requests: a new store and session each, alternating, the first pair discarded
    // (process-wide lazy state: TLS contexts, the list fetcher's session).
    progress("CRL: first requests, \(rounds) rounds")
    var firstEnforce: [Double] = []
    var firstOff: [Double] = []
    for round in 0...rounds {
        for mode in [CRLCheckMode.enforceSoftFail, .off] {
            let store = try await crlBenchmarkStore(settings, mode: mode)
            let session = try crlBenchmarkSession(store, settings)
            let before = world.crlFetches
            let started = ContinuousClock.now
            let (body, _) = try await session.data(from: settings.url)
            let elapsed = ContinuousClock.now - started
            session.finishTasksAndInvalidate()
            guard body.count == size, world.crlFetches - before == (mode == .off ? 0 : 2) else {
                throw BenchmarkError("a first request of a \(mode) store did not fetch the CRLs as expected")
            }
            guard round > 0 else { continue }
            let milliseconds = Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
            if mode == .off { firstOff.append(milliseconds) } else { firstEnforce.append(milliseconds) }
        }
    }
    let median = { (values: [Double]) in values.sorted()[values.count / 2] }
    let (coldEnforce, coldOff) = (median(firstEnforce), median(firstOff))
    func spread(_ values: [Double]) -> String { String(format: "%.1f-%.1f", values.min() ?? 0, values.max() ?? 0) }
    return [
        Row(name: "pooled GET, CRL enforce, cached verdict: requests/s", value: String(format: "%.0f req/s", enforceRate),
            baseline: String(format: "CRL off %.0f req/s", offRate), ratio: String(format: "%.3fx (time)", offRate / enforceRate),
            target: "report", met: nil),
        Row(name: "first request, new store, CRL enforce, cold cache (fetch + verify 2 CRLs, 10,000 + 0 entries)",
            value: String(format: "%.1f ms", coldEnforce) + " (\(spread(firstEnforce)))",
            baseline: String(format: "CRL off %.1f ms", coldOff) + " (\(spread(firstOff)))",
            ratio: String(format: "+%.1f ms", coldEnforce - coldOff), target: "report", met: nil),
    ]
}
#endif
