import Foundation
import PinStore
import PinStoreSigning
#if canImport(Glibc)
import Glibc
#endif

// PinStore benchmarks. Every target is a ratio against a baseline measured in this same run.
//   swift run -c release --package-path Benchmarks            all benchmarks
//   swift run -c release --package-path Benchmarks validate   the validate(fingerprint:) rows only
//   swift run -c release --package-path Benchmarks ahc        pinned versus unpinned AsyncHTTPClient only
//   swift run -c release --package-path Benchmarks ats        ATS certificate minimums in a pinning decision only
//   swift run -c release --package-path Benchmarks reports    what a reportURI adds to a refused connection
//   swift run -c release --package-path Benchmarks keysets    a 2-of-3 key set versus one key on a 1,000-entry list
//   swift run -c release --package-path Benchmarks ct         the CT check of a new chain (2 SCTs) versus 2 bare P-256 verifies
//   swift run -c release --package-path Benchmarks crl [SMALL LARGE]  the CRL check: decision, pooled GET (callgrind, req/s), first fetch
//   swift run -c release --package-path Benchmarks publisher  a partner probe, a 1,000-partner list, rotation-to-publication by K, T, interval
//   swift run -c release --package-path Benchmarks rotation-loop [STORES [after-probe]]  an unannounced rotation end to end, in real time (default intervals)
//   swift run -c release --package-path Benchmarks memory N   (internal) peak RSS of an N-entry store
//   sudo Benchmarks/.build/release/PinStoreBenchmarks session          URLSession/AsyncHTTPClient against nginx
//   sudo Benchmarks/.build/release/PinStoreBenchmarks session-first N  first request of a process, N processes a phase
//   sudo Benchmarks/.build/release/PinStoreBenchmarks session-speed [ROUNDS]  pinned URLSession vs AsyncHTTPClient and plain URLSession, req/s
//   Benchmarks/.build/release/PinStoreBenchmarks session-instructions [100 1000]  instructions and mallocs per request under callgrind
//   swift run -c release --package-path Benchmarks soak [REQUESTS]      memory kept per request: pinned URLSession vs AsyncHTTPClient
//   swift run -c release --package-path Benchmarks soak-handshakes [N]  memory kept per handshake: NIO verifier vs swift-nio-ssl
//   swift run -c release --package-path Benchmarks soak-store [SECONDS] memory kept per list update: a store under run()

/// Runs `body` on the global executor while the calling thread waits for it. main.swift stays
/// synchronous so that the process never parks its main thread in `dispatch_main()` (what an
/// asynchronous main does): valgrind 3.19 crashes there, and the callgrind modes need it.
func blocking<T>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = BlockingResult<T>()
    Task {
        do { result.value = .success(try await body()) } catch { result.value = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let value = result.value else { throw CancellationError() }
    return try value.get()
}

/// The result of ``blocking(_:)``'s task: written once by the task before it signals, read by
/// the waiting thread after.
private final class BlockingResult<T>: @unchecked Sendable {
    var value: Result<T, any Error>?
}

/// A fetcher that serves fixed bytes: the benchmarks measure PinStore, not a network.
struct FixedFetcher: FingerprintListFetcher {
    let body: Data
    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        FingerprintListResponse(statusCode: 200, headers: [:], body: body)
    }
}

/// Random fingerprints for `count` distinct host names, as a static-mode list body.
func makeEntries(_ count: Int) -> [FingerprintEntry] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { index in
        FingerprintEntry(name: "host-\(index).bench.pinstore.test",
                         fingerprint: Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }),
                         expires: 4_102_444_799)
    }
}

func listJSON(_ entries: [FingerprintEntry], signingKey: P256PrivateKey? = nil) throws -> Data {
    var items: [[String: Any]] = []
    items.reserveCapacity(entries.count)
    for entry in entries {
        var item: [String: Any] = ["name": entry.name, "fingerprint": entry.fingerprint.base64EncodedString(), "expires": entry.expires]
        if let signingKey { item["signature"] = try signingKey.signature(for: entry.signedBytes).base64EncodedString() }
        items.append(item)
    }
    return try JSONSerialization.data(withJSONObject: ["fingerprints": items])
}

func scratchDirectory() -> URL {
    // tmpfs where there is one, so fsync does not dominate the store benchmarks.
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    let url = base.appendingPathComponent("pinstore-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    scratchLock.lock()
    if scratchDirectories.isEmpty {
        // Every mode ends with `exit`: remove this process's folders then, so runs do not pile
        // up in /dev/shm.
        atexit {
            scratchLock.lock()
            for url in scratchDirectories { try? FileManager.default.removeItem(at: url) }
            scratchLock.unlock()
        }
    }
    scratchDirectories.append(url)
    scratchLock.unlock()
    return url
}

/// The scratch folders this process made (``scratchDirectory()``), behind ``scratchLock``.
nonisolated(unsafe) var scratchDirectories: [URL] = []
let scratchLock = NSLock()

func storeWithFallback(_ entries: [FingerprintEntry], publicKey: String) throws -> PinStore {
    try PinStore(configuration: .init(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                      publicKey: publicKey, identifier: "bench",
                                      fallbackData: listJSON(entries), storageDirectory: scratchDirectory()),
                 fetcher: FixedFetcher(body: Data()))
}

/// What the deployed clients do: walk every entry, compare names case-insensitively and
/// fingerprints byte by byte.
func linearScan(_ entries: [FingerprintEntry], name: String, fingerprint: Data, now: Date) -> PinStore.ValidationResult {
    var matchedName = false
    for entry in entries where entry.name.lowercased() == name.lowercased() && entry.isValid(at: now) {
        matchedName = true
        if entry.fingerprint == fingerprint { return .trusted }
    }
    return matchedName ? .untrusted : .empty
}

func currentResidentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    let pages = Int(statm.split(separator: " ").dropFirst().first ?? "0") ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The process's resident high-water mark (VmHWM; unlike ru_maxrss it starts afresh at exec).
func peakResidentBytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}

// MARK: - Memory mode (a child process measures one store size)

let arguments = CommandLine.arguments
#if canImport(FoundationNetworking)
// Issue 9 (PinnedSessionBenchmark.swift): `session` runs only the pinned-URLSession benchmark;
// `session-memory` is its child process measuring one 200 MB body; `session-first [N]` runs
// only the first-request rows (N fresh processes per phase), `session-phase` is their child.
if arguments.count == 4, arguments[1] == "session-memory", let url = URL(string: arguments[3]) {
    try blocking { try await pinnedSessionMemoryChild(arguments[2], url) }
    exit(0)
}
if arguments.count == 4, arguments[1] == "session-phase", let url = URL(string: arguments[3]) {
    try blocking { try await coldPhaseChild(arguments[2], url) }
    exit(0)
}
if arguments.count >= 3, arguments[1] == "session-profile", let requests = Int(arguments[2]) {
    try blocking {
        try await pinnedSessionProfile(requests: requests, client: arguments.count > 3 ? arguments[3] : "pinned",
                                       port: arguments.count > 4 ? Int(arguments[4]) : nil)
    }
    exit(0)
}
// Issue 33 (SessionSpeedBenchmark.swift): the pinned session's per-request cost against
// AsyncHTTPClient and plain URLSession (requests/s ratios), and under callgrind.
if arguments.count >= 2, arguments[1] == "session-speed" {
    do {
        printTable(try blocking { try await sessionSpeedRows(rounds: arguments.count > 2 ? Int(arguments[2]) ?? 7 : 7) })
    } catch {
        FileHandle.standardError.write(Data("session-speed failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if arguments.count >= 2, arguments[1] == "session-instructions" {
    do {
        let counts = arguments.dropFirst(2).compactMap { Int($0) }
        printTable(try sessionInstructionRows(small: counts.count == 2 ? counts[0] : 100, large: counts.count == 2 ? counts[1] : 1_000))
    } catch {
        FileHandle.standardError.write(Data("session-instructions failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if arguments.count >= 2, arguments[1] == "session-first" {
    // The first-request rows only (ColdStartBenchmark.swift): nginx, the test root installed.
    printTable(try blocking { try await firstRequestBenchmarkRows(processes: arguments.count == 3 ? Int(arguments[2]) ?? 11 : 11) })
    exit(0)
}
// Issue 37 (SoakBenchmark.swift): what a long-lived process keeps per request, handshake and
// list update, each in a child process, beside a baseline in the same run.
if arguments.count >= 2, arguments[1] == "soak" {
    do {
        printTable(try soakRequestRows(requests: arguments.count > 2 ? Int(arguments[2]) ?? 200_000 : 200_000))
    } catch {
        FileHandle.standardError.write(Data("soak failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if arguments.count == 5, arguments[1] == "soak-requests", let port = Int(arguments[3]), let requests = Int(arguments[4]) {
    try blocking { try await soakRequestsChild(client: arguments[2], port: port, requests: requests) }
    exit(0)
}
if arguments.count == 2, arguments[1] == "session" {
    // A setup failure is reported, not raised at top level (which traps).
    do {
        printTable(try blocking { try await pinnedSessionBenchmarkRows() })
    } catch {
        FileHandle.standardError.write(Data("session benchmark failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
#endif
if arguments.count >= 2, arguments[1] == "soak-handshakes" {
    printTable(soakHandshakeRows(handshakes: arguments.count > 2 ? Int(arguments[2]) ?? 100_000 : 100_000))
    exit(0)
}
if arguments.count == 4, arguments[1] == "soak-handshakes-child", let handshakes = Int(arguments[3]) {
    try soakHandshakesChild(mode: arguments[2], handshakes: handshakes)
    exit(0)
}
if arguments.count >= 2, arguments[1] == "soak-store" {
    printTable(soakStoreRows(seconds: arguments.count > 2 ? Int(arguments[2]) ?? 600 : 600))
    exit(0)
}
if arguments.count == 3, arguments[1] == "soak-store-child", let seconds = Int(arguments[2]) {
    try blocking { try await soakStoreChild(seconds: seconds) }
    exit(0)
}
// `validate-loop N OPS`: OPS lookups in an N-entry store and nothing else, for an instruction
// count that a busy machine cannot disturb:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null PinStoreBenchmarks validate-loop 1000 100000
// minus the same with OPS = 0, divided by OPS.
if arguments.count == 4, arguments[1] == "validate-loop", let size = Int(arguments[2]), let operations = Int(arguments[3]) {
    let entries = makeEntries(size)
    let store = try storeWithFallback(entries, publicKey: try P256PrivateKey().publicKey.x963Representation.base64EncodedString())
    let probe = entries[size / 2]
    for _ in 0..<operations { Harness.consume(store.matchPins(commonName: probe.name, fingerprint: probe.fingerprint)) }
    exit(0)
}
if arguments.count == 3, arguments[1] == "memory" {
    // The parent wrote the list; reading it is part of the baseline, building the store is not.
    let json = try Data(contentsOf: URL(fileURLWithPath: arguments[2]))
    let key = try P256PrivateKey()
    let configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                               publicKey: try key.publicKey.x963Representation.base64EncodedString(),
                                               identifier: "bench", fallbackData: json, storageDirectory: scratchDirectory())
    let residentBefore = currentResidentBytes()
    let peakBefore = peakResidentBytes()
    let store = try PinStore(configuration: configuration, fetcher: FixedFetcher(body: Data()))
    Harness.consume(store.matchPins(commonName: "host-0.bench.pinstore.test", fingerprint: Data(count: 32)))
    let peakGrowth = peakResidentBytes() - peakBefore
    let retained = currentResidentBytes() - residentBefore
    withExtendedLifetime(store) {}
    print(peakGrowth, retained, json.count)
    exit(0)
}

func childMemory(_ count: Int) -> (peak: Int, retained: Int, jsonBytes: Int)? {
    let file = scratchDirectory().appendingPathComponent("list.json")
    guard (try? listJSON(makeEntries(count)).write(to: file)) != nil else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["memory", file.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    process.waitUntilExit()
    let parts = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
    guard parts.count == 3 else { return nil }
    return (parts[0], parts[1], parts[2])
}

// MARK: - AsyncHTTPClient only (AsyncHTTPClientBenchmark.swift)

if arguments.count == 2, arguments[1] == "ahc" {
    print("PinStore AsyncHTTPClient benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    printTable(try blocking { try await asyncHTTPClientBenchmarkRows() })
    exit(0)
}

// MARK: - ATS certificate minimums only (TransportSecurityBenchmark.swift)

if arguments.count == 2, arguments[1] == "ats" {
    print("PinStore ATS certificate-minimum benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    printTable(try transportSecurityBenchmarkRows())
    exit(0)
}

// Issue 20 (KeySetBenchmark.swift): `keysets` runs only the key set rows.
if arguments.count == 2, arguments[1] == "keysets" {
    print("PinStore key set benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    printTable(try keySetBenchmarkRows())
    exit(0)
}

// Issue 26 (CertificateTransparencyBenchmark.swift): `ct` runs only the embedded SCT check rows.
if arguments.count == 2, arguments[1] == "ct" {
    print("PinStore Certificate Transparency benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    printTable(try certificateTransparencyBenchmarkRows())
    exit(0)
}

// Issue 34 (CRLBenchmark.swift): `crl [SMALL LARGE]` runs only the CRL rows (SMALL and LARGE:
// the GETs of the two callgrind runs per mode); `crl-profile` is the child under callgrind.
if arguments.count >= 2, arguments[1] == "crl" {
    print("PinStore CRL benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    let counts = arguments.dropFirst(2).compactMap { Int($0) }
    do {
        printTable(try counts.count == 2 ? crlBenchmarkRows(small: counts[0], large: counts[1]) : crlBenchmarkRows())
    } catch {
        FileHandle.standardError.write(Data("crl benchmark failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
#if canImport(FoundationNetworking)
if arguments.count == 5, arguments[1] == "crl-profile", let requests = Int(arguments[2]) {
    try blocking { try await crlSessionProfile(requests: requests, mode: arguments[3], settings: URL(fileURLWithPath: arguments[4])) }
    exit(0)
}
#endif

// Issue 31 (PublisherBenchmark.swift): `publisher` runs only the publisher rows.
if arguments.count == 2, arguments[1] == "publisher" {
    print("PinStore publisher benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    printTable(try blocking { try await publisherBenchmarkRows() + rotationLatencyRows() })
    exit(0)
}

// Issue 44 (RotationLoopBenchmark.swift): `rotation-loop [STORES [after-probe]]` swaps a
// partner's leaf unannounced under three vantage points and STORES stores (50 by default),
// clean and with one vantage point intercepted a minute after a probe, then clean seconds after
// a probe (`after-probe`: that run alone), in real time at the default intervals (2-3 minutes a run).
if arguments.count >= 2, arguments[1] == "rotation-loop" {
    print("PinStore rotation-loop benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    do {
        printTable(try blocking { try await rotationLoopRows(stores: arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50, only: arguments.count > 3 ? arguments[3] : nil) })
    } catch {
        FileHandle.standardError.write(Data("rotation-loop failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

// Issue 12 (ReportBenchmark.swift): `reports` runs only the pin-failure report rows.
if arguments.count == 2, arguments[1] == "reports" {
    printTable(try reportBenchmarkRows())
    exit(0)
}

// MARK: - Benchmarks

print("PinStore benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
var rows: [Row] = []
let signingKey = try P256PrivateKey()
let publicKey = try signingKey.publicKey
let publicKeyText = publicKey.x963Representation.base64EncodedString()

// 1. matchPins(commonName:fingerprint:) against list size, versus a linear scan.
var validateMedians: [Double] = []
for size in [10, 1_000, 100_000] {
    let entries = makeEntries(size)
    let store = try storeWithFallback(entries, publicKey: publicKeyText)
    let probe = entries[size / 2]
    let operations = 20_000
    let pinstore = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(store.matchPins(commonName: probe.name, fingerprint: probe.fingerprint)) }
    }
    let scanOperations = max(10, min(operations, 2_000_000 / size))
    let now = Date()
    let scan = Harness.nanosecondsPerOperation(operations: scanOperations, samples: size >= 100_000 ? 5 : 15) {
        for _ in 0..<scanOperations { Harness.consume(linearScan(entries, name: probe.name, fingerprint: probe.fingerprint, now: now)) }
    }
    validateMedians.append(pinstore)
    rows.append(Row(name: "validate(fingerprint:), \(size) entries", value: Harness.format(pinstore),
                    baseline: "linear scan \(Harness.format(scan))", ratio: pinstore / scan < 0.01 ? String(format: "1/%.0fx", scan / pinstore) : String(format: "%.2fx", pinstore / scan),
                    target: "< 150 ns median", met: pinstore < 150))
}
let flatness = (validateMedians.max() ?? 1) / (validateMedians.min() ?? 1)
rows.append(Row(name: "validate flatness (slowest / fastest size)", value: String(format: "%.2fx", flatness),
                baseline: "-", ratio: "-", target: "flat (< 2x)", met: flatness < 2))
// 1b. Static policies (PinPolicy). A store without any keeps the hot path above as it was (one
// flag test); with policies, the fingerprint form also looks at the policies for the host, and
// the connection decision reads the keys of the validated chain (OpenSSL parses each certificate).
do {
    let entries = makeEntries(1_000)
    let probe = entries[500]
    let listOnly = try storeWithFallback(entries, publicKey: publicKeyText)
    let backup = Data(repeating: 0xB0, count: 32).base64EncodedString()
    let policies = (0..<10).map { index in
        PinPolicy(domain: "policy-\(index).bench.pinstore.test", includesSubdomains: true,
                  pins: [.leafKey(spkiSHA256Base64: Data(repeating: UInt8(index), count: 32).base64EncodedString()), .caKey(spkiSHA256Base64: backup)])
    }
    let withPolicies = try PinStore(configuration: .init(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                                         publicKey: publicKeyText, identifier: "bench", fallbackData: listJSON(entries),
                                                         storageDirectory: scratchDirectory(), policies: policies),
                                    fetcher: FixedFetcher(body: Data()))
    let operations = 20_000
    let plain = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(listOnly.matchPins(commonName: probe.name, fingerprint: probe.fingerprint)) }
    }
    let policed = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(withPolicies.matchPins(commonName: probe.name, fingerprint: probe.fingerprint)) }
    }
    rows.append(Row(name: "validate(fingerprint:), 1000 entries + 10 policies", value: Harness.format(policed),
                    baseline: "no policies \(Harness.format(plain))", ratio: String(format: "%.2fx", policed / plain),
                    target: "< 2x", met: policed / plain < 2))

    // The whole connection decision (chain validation + pin check) on the fixture chain.
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/pki")
    func pem(_ name: String) throws -> [X509Certificate] {
        try X509Certificate.certificates(pem: String(decoding: Data(contentsOf: fixtures.appendingPathComponent(name)), as: UTF8.self))
    }
    let chain = try pem("localhost-chain.pem").map(\.derRepresentation)
    let anchors = TrustRoots.anchors(try pem("root-ca.pem"))
    let leaf = try pem("localhost.pem")[0]
    let pinned = [FingerprintEntry(name: "localhost", fingerprint: leaf.fingerprint, expires: 4_102_444_799)]
    let listEvaluator = PinningEvaluator(store: try storeWithFallback(pinned, publicKey: publicKeyText), trustRoots: anchors,
                                         updateOnEmpty: false, updateOnMismatch: false)
    let policyStore = try PinStore(configuration: .init(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                                        publicKey: publicKeyText, identifier: "bench", storageDirectory: scratchDirectory(),
                                                        policies: [PinPolicy(domain: "localhost", pins: [.caKey(spkiSHA256Base64: backup),
                                                                                                         .leafKey(spkiSHA256Base64: leaf.spkiSHA256Base64)])]),
                                   fetcher: FixedFetcher(body: Data()))
    let policyEvaluator = PinningEvaluator(store: policyStore, trustRoots: anchors, updateOnEmpty: false, updateOnMismatch: false)
    let decisions = 500
    let listDecision = Harness.nanosecondsPerOperation(operations: decisions) {
        for _ in 0..<decisions { Harness.consume(listEvaluator.evaluateNow(host: "localhost", presentedChain: chain)) }
    }
    let policyDecision = Harness.nanosecondsPerOperation(operations: decisions) {
        for _ in 0..<decisions { Harness.consume(policyEvaluator.evaluateNow(host: "localhost", presentedChain: chain)) }
    }
    rows.append(Row(name: "connection decision, leaf-key policy (3 certs)", value: Harness.format(policyDecision),
                    baseline: "list pin \(Harness.format(listDecision))", ratio: String(format: "%.2fx", policyDecision / listDecision),
                    target: "< 1.5x", met: policyDecision / listDecision < 1.5))
}
if arguments.count == 2, arguments[1] == "validate" {
    printTable(rows)
    exit(0)
}

// 2. matchPins(commonName:certificateData:) on 1.5 KB versus SHA-256 of the same bytes.
do {
    let entries = makeEntries(1_000)
    let store = try storeWithFallback(entries, publicKey: publicKeyText)
    // validate(certificateData:) hashes the bytes without parsing them, so 1,536 random bytes
    // cost what a 1.5 KB certificate costs.
    let certificate = Data((0..<1_536).map { _ in UInt8.random(in: 0...255) })
    let operations = 20_000
    let pinstore = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(store.matchPins(commonName: entries[500].name, certificateData: certificate)) }
    }
    let hashOnly = Harness.nanosecondsPerOperation(operations: operations) {
        for _ in 0..<operations { Harness.consume(SHA256Digest.hash(certificate)) }
    }
    rows.append(Row(name: "validate(certificateData:), 1.5 KB", value: Harness.format(pinstore),
                    baseline: "SHA-256 alone \(Harness.format(hashOnly))", ratio: String(format: "%.2fx", pinstore / hashOnly),
                    target: "<= 1.5x", met: pinstore / hashOnly <= 1.5))
}

// 3. Verifying a 1,000-entry static list versus OpenSSL's raw P-256 verify rate.
do {
    let entries = makeEntries(1_000)
    let body = try listJSON(entries, signingKey: signingKey)
    let message = entries[0].signedBytes
    let signature = try signingKey.signature(for: message)
    let rawOperations = 1_000
    let raw = Harness.nanosecondsPerOperation(operations: rawOperations, samples: 7) {
        for _ in 0..<rawOperations { Harness.consume(publicKey.isValidSignature(signature, for: message)) }
    }
    let list = Harness.nanosecondsPerOperation(operations: entries.count, samples: 7) {
        Harness.consume(try? FingerprintList.verifiedEntries(staticList: body, publicKey: publicKey))
    }
    let rawRate = 1e9 / raw
    let listRate = 1e9 / list
    let cores = ProcessInfo.processInfo.activeProcessorCount
    rows.append(Row(name: "verify 1,000-entry list (all \(cores) cores)", value: String(format: "%.0f entries/s", listRate),
                    baseline: String(format: "OpenSSL verify, 1 core %.0f/s", rawRate), ratio: String(format: "%.2fx", listRate / rawRate),
                    target: ">= 0.8x of 1 core", met: listRate / rawRate >= 0.8))
    // One core: below the parallel threshold each list verifies on the calling thread.
    let small = Array(entries.prefix(50))
    let smallBody = try listJSON(small, signingKey: signingKey)
    let single = Harness.nanosecondsPerOperation(operations: small.count * 20, samples: 7) {
        for _ in 0..<20 { Harness.consume(try? FingerprintList.verifiedEntries(staticList: smallBody, publicKey: publicKey)) }
    }
    rows.append(Row(name: "verify list on 1 core (50-entry lists)", value: String(format: "%.0f entries/s", 1e9 / single),
                    baseline: String(format: "OpenSSL verify, 1 core %.0f/s", rawRate), ratio: String(format: "%.2fx", (1e9 / single) / rawRate),
                    target: ">= 0.8x", met: (1e9 / single) / rawRate >= 0.8))

    // 4. Loading a persisted 1,000-entry store (every signature verified again).
    let directory = scratchDirectory()
    let configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
                                               publicKey: publicKeyText, identifier: "load", storageDirectory: directory)
    let seeded = try PinStore(configuration: configuration, fetcher: FixedFetcher(body: body))
    _ = try blocking { await seeded.update(mode: .forced) }
    let load = Harness.nanosecondsPerOperation(operations: 1, samples: 7) {
        Harness.consume(try? PinStore(configuration: configuration, fetcher: FixedFetcher(body: Data())))
    }
    rows.append(Row(name: "load persisted 1,000-entry store", value: Harness.format(load),
                    baseline: "verify list alone \(Harness.format(list * 1_000))", ratio: String(format: "%.2fx", load / (list * 1_000)),
                    target: "report", met: nil))
}

// 5. Peak memory of a 100,000-entry store (in a child process, so nothing else counts).
if let memory = childMemory(100_000) {
    rows.append(Row(name: "peak memory growth, 100,000-entry store", value: String(format: "%.1f MiB", Double(memory.peak) / 1_048_576),
                    baseline: String(format: "list JSON %.1f MiB", Double(memory.jsonBytes) / 1_048_576),
                    ratio: String(format: "%.2fx", Double(memory.peak) / Double(memory.jsonBytes)), target: "report", met: nil))
    rows.append(Row(name: "resident growth after build, 100,000 entries", value: String(format: "%.1f MiB", Double(memory.retained) / 1_048_576),
                    baseline: String(format: "list JSON %.1f MiB", Double(memory.jsonBytes) / 1_048_576),
                    ratio: String(format: "%.2fx", Double(memory.retained) / Double(memory.jsonBytes)), target: "report", met: nil))
}

// 5a. A 2-of-3 key set versus one key on a 1,000-entry list (KeySetBenchmark.swift).
rows += try keySetBenchmarkRows()

// 5a'. The CT check of a new chain with two SCTs versus two bare P-256 verifies (CertificateTransparencyBenchmark.swift).
rows += try certificateTransparencyBenchmarkRows()

// 5a''. The CRL check: the decision (pooled, new chain against 10,000 entries), a pooled GET
// through the pinned URLSession (callgrind and req/s), the first fetch (CRLBenchmark.swift).
// Loopback servers and child processes: a failure there skips these rows, not the run.
do {
    rows += try crlBenchmarkRows()
} catch {
    print("CRL benchmark skipped: \(error)")
}

// 5b. What a reportURI adds to a refused connection (ReportBenchmark.swift).
rows += try reportBenchmarkRows()

// 6. A full TLS handshake plus one request, pinned versus normal verification only (HandshakeBenchmark.swift).
rows += try handshakeBenchmarkRows()

// 7. Pinned versus unpinned AsyncHTTPClient, keep-alive (AsyncHTTPClientBenchmark.swift).
rows += try blocking { try await asyncHTTPClientBenchmarkRows() }
#if canImport(FoundationNetworking)
// 7. The pinned URLSession against nginx, beside plain URLSession (PinnedSessionBenchmark.swift).
do {
    rows += try blocking { try await pinnedSessionBenchmarkRows() }
} catch {
    print("pinned URLSession benchmark skipped: \(error)")
}
#endif

printTable(rows)
