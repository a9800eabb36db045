#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO
import AsyncHTTPClient
import NIOSSL

// Issue 9: the pinned URLSession as an HTTP client, against nginx (Debian's package) with
// keep-alive on 127.0.0.1, side by side with plain URLSession (libcurl) in one run: 300
// sequential and 300 at 16 concurrent 1 KiB GETs, requests/s, p50/p99, and the TLS connections
// nginx saw; then a 200 MB body through a delegate-based pinned data task, peak resident.
//
// Plain URLSession trusts only the system store, so for the run the test root is appended to
// /etc/ssl/certs/ca-certificates.crt, and the file is restored byte for byte afterwards.

let benchmarkFixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let fixtures = benchmarkFixtures

enum PinnedSessionBenchmarkError: Error, CustomStringConvertible {
    case setup(String)
    var description: String {
        switch self { case .setup(let detail): "setup failed: \(detail)" }
    }
}

/// nginx on 127.0.0.1 with the localhost fixture chain, keep-alive on, one worker; every request
/// is logged with nginx's connection serial number, so handshakes can be counted.
final class LoopbackNginx {
    let port: Int
    let directory: URL
    private let process: Process

    /// Started on a random port; another port when that one is taken (up to 5 tries).
    static func start() throws -> LoopbackNginx {
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                return try LoopbackNginx()
            } catch {
                lastError = error
            }
        }
        throw lastError ?? PinnedSessionBenchmarkError.setup("nginx did not start")
    }

    private init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else {
            throw PinnedSessionBenchmarkError.setup("nginx is not installed (apt-get install -y nginx)")
        }
        directory = scratchDirectory()
        let www = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try Data((0..<1024).map { UInt8($0 % 251) }).write(to: www.appendingPathComponent("small"))
        try Data((0..<(1 << 20)).map { UInt8($0 % 251) }).write(to: www.appendingPathComponent("medium"))
        // 200 MB (decimal, like the issue's figure) of a non-trivial pattern.
        let chunk = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = FileManager.default.createFile(atPath: www.appendingPathComponent("big").path, contents: nil)
        let big = try FileHandle(forWritingTo: www.appendingPathComponent("big"))
        var written = 0
        while written < 200_000_000 {
            let piece = chunk.prefix(200_000_000 - written)
            big.write(piece)
            written += piece.count
        }
        try big.close()
        port = Int.random(in: 20_000..<60_000)
        let configuration = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/error.log;
        events { worker_connections 1024; }
        http {
            log_format bench '$connection $request_uri';
            access_log \(directory.path)/access.log bench;
            client_body_temp_path \(directory.path)/body;
            proxy_temp_path \(directory.path)/proxy;
            fastcgi_temp_path \(directory.path)/fastcgi;
            uwsgi_temp_path \(directory.path)/uwsgi;
            scgi_temp_path \(directory.path)/scgi;
            keepalive_timeout 60s;
            keepalive_requests 100000;
            sendfile on;
            server {
                listen 127.0.0.1:\(port) ssl;
                ssl_certificate \(fixtures.path)/pki/localhost-dnsonly-chain.pem;
                ssl_certificate_key \(fixtures.path)/pki/localhost-dnsonly.key.pem;
                ssl_session_cache off;
                ssl_session_tickets off;
                root \(www.path);
            }
        }
        """
        let file = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", file.path, "-p", directory.path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until it accepts connections.
        for _ in 0..<100 {
            if (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8))?.contains("emerg") == true { break }
            if Self.accepts(port: port) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: directory)
        throw PinnedSessionBenchmarkError.setup("nginx did not start: \(log)")
    }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Log lines so far (`<connection serial> <uri>`).
    func logLines() -> [Substring] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }

    /// nginx's serial numbers of the connections that served requests so far.
    func connectionSerials() -> Set<Substring> {
        Set(logLines().compactMap { $0.split(separator: " ").first })
    }

    func stop() {
        // nginx without a master process inherits the blocked signal mask of the Swift
        // runtime's threads and ignores SIGTERM: end it with SIGKILL.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Installs the test root in the system trust store for the benchmark's duration, where
/// `update-ca-certificates` would put it: appended to the bundle, and as `<subject hash>.N` in
/// the hashed certificate directory. `restore()` puts the bundle back byte for byte (checked by
/// SHA-256) and removes the hashed file.
struct SystemTrustForBenchmark {
    static let bundle = URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt")
    static let directory = URL(fileURLWithPath: "/etc/ssl/certs")
    let original: Data
    let hashedFile: URL

    init() throws {
        original = try Data(contentsOf: Self.bundle)
        let rootPath = fixtures.appendingPathComponent("pki/root-ca.pem")
        let root = try Data(contentsOf: rootPath)
        guard original.range(of: root) == nil else {
            throw PinnedSessionBenchmarkError.setup("\(Self.bundle.path) already holds the test root (an earlier run was interrupted?): remove it first")
        }
        // OpenSSL's subject-name hash names the file in the directory (`openssl rehash` does the same).
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["x509", "-subject_hash", "-noout", "-in", rootPath.path]
        let pipe = Pipe()
        openssl.standardOutput = pipe
        try openssl.run()
        let hash = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        openssl.waitUntilExit()
        guard hash.count == 8 else { throw PinnedSessionBenchmarkError.setup("openssl gave no subject hash") }
        guard let free = (0..<10).lazy.map({ Self.directory.appendingPathComponent("\(hash).\($0)") })
            .first(where: { !FileManager.default.fileExists(atPath: $0.path) }) else {
            throw PinnedSessionBenchmarkError.setup("no free hashed name for \(hash)")
        }
        hashedFile = free
        self.root = root
        try (original + Data("\n".utf8) + root).write(to: Self.bundle)
        try root.write(to: hashedFile)
    }

    private let root: Data

    /// Leaves the root in the bundle only while `body` runs (a system store that is not hashed,
    /// or a root the directory lacks: the bundle has to be parsed).
    func withRootInBundleOnly<T>(_ body: () throws -> T) rethrows -> T {
        try? FileManager.default.removeItem(at: hashedFile)
        defer { try? root.write(to: hashedFile) }
        return try body()
    }

    func restore() {
        try? FileManager.default.removeItem(at: hashedFile)
        for _ in 0..<3 {
            try? original.write(to: Self.bundle)
            if let now = try? Data(contentsOf: Self.bundle), SHA256Digest.hash(now) == SHA256Digest.hash(original) { return }
        }
        FileHandle.standardError.write(Data("WARNING: \(Self.bundle.path) could not be restored; it still trusts the test root\n".utf8))
    }
}

/// A value behind a lock (the library's own box is package-internal).
final class BenchBox<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

struct RunFigures {
    var requestsPerSecond: Double
    var p50: Double
    var p99: Double
}

private func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

/// One of the clients compared: a URLSession (plain, pinned, or answering from memory) or an
/// AsyncHTTPClient.
enum BenchClient: Sendable {
    case session(URLSession)
    case asyncHTTPClient(HTTPClient)

    /// One GET; the body's size.
    func get(_ url: URL) async throws -> Int {
        switch self {
        case .session(let session):
            return try await session.data(for: URLRequest(url: url)).0.count
        case .asyncHTTPClient(let client):
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(30))
            return try await response.body.collect(upTo: 4 << 20).readableBytes
        }
    }
}

/// `count` GETs of `url` on `client`, `concurrency` at a time; each body must be `expectedSize` bytes.
func runRequests(_ client: BenchClient, _ url: URL, count: Int, concurrency: Int, expectedSize: Int = 1024) async throws -> RunFigures {
    let clock = ContinuousClock()
    let started = clock.now
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
        let next = BenchBox(0)
        for _ in 0..<concurrency {
            group.addTask {
                var mine: [Double] = []
                while next.withLock({ value -> Bool in value += 1; return value <= count }) {
                    let begin = clock.now
                    let size = try await client.get(url)
                    guard size == expectedSize else { throw PinnedSessionBenchmarkError.setup("short body: \(size)") }
                    let elapsed = clock.now - begin
                    mine.append(Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15)
                }
                return mine
            }
        }
        return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
    }
    let total = clock.now - started
    let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
    return RunFigures(requestsPerSecond: Double(count) / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99))
}

/// A progress line on standard error, so a long run shows where it is.
func progress(_ text: String) {
    FileHandle.standardError.write(Data("[\(Date())] \(text)\n".utf8))
}

/// The median run of `rounds` of each client by requests/s, and the spread (slowest and fastest
/// round's requests/s); the clients' rounds interleaved, in an order that rotates each round, so
/// that load from elsewhere on a shared machine falls on all alike.
func medianRuns(_ clients: [BenchClient], _ url: URL, count: Int, concurrency: Int,
                rounds: Int, expectedSize: Int = 1024) async throws -> [(median: RunFigures, slowest: Double, fastest: Double)] {
    var runs = Array(repeating: [RunFigures](), count: clients.count)
    for round in 0..<rounds {
        for offset in clients.indices {
            let index = (offset + round) % clients.count
            runs[index].append(try await runRequests(clients[index], url, count: count, concurrency: concurrency, expectedSize: expectedSize))
        }
    }
    return runs.map { figures in
        let sorted = figures.sorted { $0.requestsPerSecond < $1.requestsPerSecond }
        return (sorted[rounds / 2], sorted.first?.requestsPerSecond ?? 0, sorted.last?.requestsPerSecond ?? 0)
    }
}

func pinnedBenchmarkStore(trustSystem: Bool = false) throws -> PinStore {
    try PinStore(configuration: .init(
        serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
        publicKey: try String(contentsOf: fixtures.appendingPathComponent("keys/list-signing.pub.b64"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines),
        identifier: "pinned-session-bench",
        fallbackData: try dnsOnlyLocalhostFallback(),
        storageDirectory: scratchDirectory()))
}

/// A fallback list pinning `localhost` to the DNS-only localhost leaf nginx serves (a leaf
/// naming 127.0.0.1 would be refused by pinned AsyncHTTPClient: swift-nio-ssl accepts it for
/// any host). Fallback lists are not signature-checked.
func dnsOnlyLocalhostFallback() throws -> Data {
    let leaf = try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent("pki/localhost-dnsonly.pem"), encoding: .utf8))[0]
    return Data(#"{"fingerprints": [{"name": "localhost", "fingerprint": "\#(leaf.fingerprintBase64)", "expires": 4102444799}]}"#.utf8)
}

/// Child mode: one delegate-based data task for `url` (pinned) or one `download(from:)`
/// (plain), then prints the peak resident bytes of this process.
func pinnedSessionMemoryChild(_ mode: String, _ url: URL) async throws {
    switch mode {
    case "pinned":
        let store = try pinnedBenchmarkStore()
        let roots = TrustRoots.anchors(try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent("pki/root-ca.pem"), encoding: .utf8)))
        let delegate = DiscardingDelegate()
        let session = URLSession(configuration: .pinned(by: store, trustRoots: roots), delegate: delegate, delegateQueue: nil)
        session.dataTask(with: url).resume()
        await delegate.done()
        print(peakResidentBytes(), delegate.bytes.withLock { $0 })
    default:
        let (file, _) = try await URLSession(configuration: .default).download(from: url)
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        try? FileManager.default.removeItem(at: file)
        print(peakResidentBytes(), size)
    }
}

private final class DiscardingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let bytes = BenchBox(0)
    private let finished = BenchBox<CheckedContinuation<Void, Never>?>(nil)
    private let isDone = BenchBox(false)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        bytes.withLock { $0 += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { FileHandle.standardError.write(Data("failed: \(error)\n".utf8)) }
        isDone.withLock { $0 = true }
        finished.withLock { $0 }?.resume()
    }

    func done() async {
        await withCheckedContinuation { continuation in
            let already = isDone.withLock { $0 }
            if already { continuation.resume() } else { finished.withLock { $0 = continuation } }
        }
    }
}

private func childPeak(_ mode: String, _ url: URL, kind: String = "session-memory") -> (peak: Int, bytes: Int)? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = [kind, mode, url.absoluteString]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let parts = String(decoding: output, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
    return parts.count == 2 ? (parts[0], parts[1]) : nil
}

/// Handshakes, then sequential and 16-concurrent rounds of every client, interleaved.
private func throughputRows(_ clients: [(name: String, client: BenchClient)], nginx: LoopbackNginx, url small: URL,
                            rounds: Int) async throws -> [Row] {
    var rows: [Row] = []
    // Handshakes: the first 300 sequential requests of each network client on a cold client.
    // New connection serials after each client's run (a log line can land late, so serials
    // are compared, not line counts).
    progress("handshakes")
    var handshakes: [Int] = []
    for (_, client) in clients.prefix(4) {
        let before = nginx.connectionSerials()
        _ = try await runRequests(client, small, count: 300, concurrency: 1)
        try await Task.sleep(for: .milliseconds(200))
        handshakes.append(nginx.connectionSerials().subtracting(before).count)
    }

    func figures(_ run: (median: RunFigures, slowest: Double, fastest: Double)) -> String {
        String(format: "%.0f req/s (%.0f-%.0f; p50 %.2f ms, p99 %.2f ms)", run.median.requestsPerSecond, run.slowest, run.fastest,
               run.median.p50, run.median.p99)
    }
    for concurrency in [1, 16] {
        progress(concurrency == 1 ? "sequential" : "concurrent")
        let results = try await medianRuns(clients.map(\.client), small, count: 300, concurrency: concurrency, rounds: rounds)
        let label = concurrency == 1 ? "300 sequential 1 KiB GETs" : "300 GETs 16 concurrent"
        let rate = results.map(\.median.requestsPerSecond)
        let (plainRate, pinnedRate, ahcRate, pinnedAHCRate, memoryRate) = (rate[0], rate[1], rate[2], rate[3], rate[4])
        rows.append(Row(name: "pinned URLSession, \(label) (nginx)", value: figures(results[1]),
                        baseline: "plain URLSession " + figures(results[0]), ratio: String(format: "%.2fx", pinnedRate / plainRate),
                        target: concurrency == 1 ? ">= 1.0x" : ">= 1.5x", met: pinnedRate / plainRate >= (concurrency == 1 ? 1.0 : 1.5)))
        rows.append(Row(name: "pinned URLSession vs AsyncHTTPClient, \(label)", value: String(format: "%.0f req/s", pinnedRate),
                        baseline: "AsyncHTTPClient " + figures(results[2]), ratio: String(format: "%.2fx", pinnedRate / ahcRate),
                        target: concurrency == 1 ? ">= 0.5x" : "report", met: concurrency == 1 ? pinnedRate / ahcRate >= 0.5 : nil))
        rows.append(Row(name: "  pinned AsyncHTTPClient, \(label)", value: figures(results[3]),
                        baseline: String(format: "AsyncHTTPClient %.0f req/s", ahcRate), ratio: String(format: "%.2fx", pinnedAHCRate / ahcRate),
                        target: "report", met: nil))
        rows.append(Row(name: "  URLProtocol ceiling (in-memory answers, no network), \(label)", value: figures(results[4]),
                        baseline: String(format: "AsyncHTTPClient %.0f req/s", ahcRate), ratio: String(format: "%.2fx", memoryRate / ahcRate),
                        target: "report", met: nil))
    }
    rows.append(Row(name: "TLS handshakes nginx saw, 300 sequential (cold client)", value: "pinned URLSession \(handshakes[1])",
                    baseline: "plain URLSession \(handshakes[0]), AsyncHTTPClient \(handshakes[2]), pinned AsyncHTTPClient \(handshakes[3])",
                    ratio: "-", target: "<= 2", met: handshakes[1] <= 2))

    return rows
}

/// Plain and pinned URLSession, AsyncHTTPClient (plain and pinned) and the URLProtocol ceiling
/// against nginx, as result rows; `coldProcesses` fresh processes per first-request phase.
func pinnedSessionBenchmarkRows(rounds: Int = 7, coldProcesses: Int = 11) async throws -> [Row] {
    let nginx = try LoopbackNginx.start()
    defer { nginx.stop() }
    let trust = try SystemTrustForBenchmark()
    defer { trust.restore() }

    let small = URL(string: "https://localhost:\(nginx.port)/small")!
    let plainConfiguration = URLSessionConfiguration.default
    plainConfiguration.httpMaximumConnectionsPerHost = 16
    let plain = URLSession(configuration: plainConfiguration)
    let roots = TrustRoots.anchors(try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent("pki/root-ca.pem"), encoding: .utf8)))
    let pinnedBase = URLSessionConfiguration.default
    pinnedBase.httpMaximumConnectionsPerHost = 16
    let store = try pinnedBenchmarkStore()
    let pinned = URLSession(configuration: .pinned(by: store, trustRoots: roots, basedOn: pinnedBase))
    // AsyncHTTPClient trusting the test root, up to 16 connections like the sessions; and the
    // same pinned through PinStoreAsyncHTTPClient (a leaf pin check per new connection).
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(fixtures.appendingPathComponent("pki/root-ca.pem").path))
    var ahcConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
    ahcConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
    ahcConfiguration.httpVersion = .http1Only
    var pinnedAHCConfiguration = ahcConfiguration
    try pinnedAHCConfiguration.pin(with: store)
    let ahc = HTTPClient(eventLoopGroupProvider: .singleton, configuration: ahcConfiguration)
    let pinnedAHC = HTTPClient(eventLoopGroupProvider: .singleton, configuration: pinnedAHCConfiguration)
    // The ceiling of any URLProtocol-based client: URLSession answering from memory, no network.
    let memory = MemoryURLProtocol.session()

    let clients: [(name: String, client: BenchClient)] = [
        ("plain URLSession", .session(plain)), ("pinned URLSession", .session(pinned)),
        ("AsyncHTTPClient", .asyncHTTPClient(ahc)), ("pinned AsyncHTTPClient", .asyncHTTPClient(pinnedAHC)),
        ("URLProtocol from memory", .session(memory)),
    ]

    var rows: [Row] = []
    do {
        rows = try await throughputRows(clients, nginx: nginx, url: small, rounds: rounds)
        try await ahc.shutdown()
        try await pinnedAHC.shutdown()
    } catch {
        try? await ahc.shutdown()
        try? await pinnedAHC.shutdown()
        throw error
    }

    rows += coldStartRows(small, processes: coldProcesses, trust: trust)

    progress("200 MB")
    let big = URL(string: "https://localhost:\(nginx.port)/big")!
    if let pinnedPeak = childPeak("pinned", big), let plainPeak = childPeak("plain", big) {
        rows.append(Row(name: "200 MB body, delegate data task, peak resident", value: String(format: "%.1f MiB (%d bytes)", Double(pinnedPeak.peak) / 1_048_576, pinnedPeak.bytes),
                        baseline: String(format: "plain download(from:) %.1f MiB", Double(plainPeak.peak) / 1_048_576),
                        ratio: String(format: "%.2fx", Double(pinnedPeak.peak) / Double(plainPeak.peak)),
                        target: "< 64 MiB", met: pinnedPeak.peak < 64 << 20 && pinnedPeak.bytes == 200_000_000))
    }
    return rows
}
#endif

#if canImport(FoundationNetworking)
/// `session-profile N [client [port]]`: N sequential GETs against nginx by one client (`pinned`,
/// the default, `plain`, `ahc` or `memory`) and nothing else, to run under `perf record` or
/// callgrind; prints req/s and this process's CPU time per request (steadier than req/s on a
/// busy machine). With `port`, against the nginx already listening there (under valgrind a
/// process cannot start one: `Process` fails with EBADF on valgrind's own descriptors).
func pinnedSessionProfile(requests: Int, client name: String, port: Int? = nil) async throws {
    let nginx = port == nil ? try LoopbackNginx.start() : nil
    defer { nginx?.stop() }
    let trust = name == "plain" ? try SystemTrustForBenchmark() : nil
    defer { trust?.restore() }
    let roots = TrustRoots.anchors(try X509Certificate.certificates(pem: String(contentsOf: fixtures.appendingPathComponent("pki/root-ca.pem"), encoding: .utf8)))
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(fixtures.appendingPathComponent("pki/root-ca.pem").path))
    let ahc = name == "ahc" ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls)) : nil
    let client: BenchClient
    switch name {
    case "plain": client = .session(URLSession(configuration: .default))
    case "memory": client = .session(MemoryURLProtocol.session())
    default:
        if let ahc {
            client = .asyncHTTPClient(ahc)
        } else {
            client = .session(URLSession(configuration: .pinned(by: try pinnedBenchmarkStore(), trustRoots: roots)))
        }
    }
    let url = URL(string: "https://localhost:\(port ?? nginx?.port ?? 443)/small")!
    _ = try await runRequests(client, url, count: 100, concurrency: 1)
    func cpuMicroseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }
    let cpuBefore = cpuMicroseconds()
    let figures = try await runRequests(client, url, count: requests, concurrency: 1)
    try await ahc?.shutdown()
    // CPU time of this process (every thread) per request: steadier than req/s on a busy machine.
    print(String(format: "%.0f req/s, %.0f µs CPU per request", figures.requestsPerSecond, (cpuMicroseconds() - cpuBefore) / Double(requests)))
}
#endif
