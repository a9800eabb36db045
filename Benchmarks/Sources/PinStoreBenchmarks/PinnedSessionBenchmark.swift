#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO

// Issue 9: the pinned URLSession as an HTTP client, against nginx (Debian's package) with
// keep-alive on 127.0.0.1, side by side with plain URLSession (libcurl) in one run: 300
// sequential and 300 at 16 concurrent 1 KiB GETs, requests/s, p50/p99, and the TLS connections
// nginx saw; then a 200 MB body through a delegate-based pinned data task, peak resident.
//
// Plain URLSession trusts only the system store, so for the run the test root is appended to
// /etc/ssl/certs/ca-certificates.crt, and the file is restored byte for byte afterwards.

private let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

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

    init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else {
            throw PinnedSessionBenchmarkError.setup("nginx is not installed (apt-get install -y nginx)")
        }
        directory = scratchDirectory()
        let www = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try Data((0..<1024).map { UInt8($0 % 251) }).write(to: www.appendingPathComponent("small"))
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
                ssl_certificate \(fixtures.path)/pki/localhost-chain.pem;
                ssl_certificate_key \(fixtures.path)/pki/localhost.key.pem;
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
        throw PinnedSessionBenchmarkError.setup("nginx did not start: \((try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")")
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

/// Appends the test root to the system bundle for the benchmark's duration and restores it.
struct SystemTrustForBenchmark {
    static let bundle = URL(fileURLWithPath: "/etc/ssl/certs/ca-certificates.crt")
    let original: Data

    init() throws {
        original = try Data(contentsOf: Self.bundle)
        let root = try Data(contentsOf: fixtures.appendingPathComponent("pki/root-ca.pem"))
        try (original + Data("\n".utf8) + root).write(to: Self.bundle)
    }

    func restore() {
        try? original.write(to: Self.bundle)
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

private struct RunFigures {
    var requestsPerSecond: Double
    var p50: Double
    var p99: Double
}

private func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

/// `count` GETs of `url` on `session`, `concurrency` at a time.
private func run(_ session: URLSession, _ url: URL, count: Int, concurrency: Int) async throws -> RunFigures {
    let clock = ContinuousClock()
    let started = clock.now
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
        let next = BenchBox(0)
        for _ in 0..<concurrency {
            group.addTask {
                var mine: [Double] = []
                while next.withLock({ value -> Bool in value += 1; return value <= count }) {
                    let begin = clock.now
                    let (data, _) = try await session.data(from: url)
                    guard data.count == 1024 else { throw PinnedSessionBenchmarkError.setup("short body: \(data.count)") }
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

/// The median runs of `rounds` by requests/s, the two clients' rounds interleaved so that load
/// from elsewhere on a shared machine falls on both alike.
private func medianRuns(_ first: URLSession, _ second: URLSession, _ url: URL, count: Int, concurrency: Int,
                        rounds: Int) async throws -> (RunFigures, RunFigures) {
    var firstRuns: [RunFigures] = []
    var secondRuns: [RunFigures] = []
    for _ in 0..<rounds {
        firstRuns.append(try await run(first, url, count: count, concurrency: concurrency))
        secondRuns.append(try await run(second, url, count: count, concurrency: concurrency))
    }
    firstRuns.sort { $0.requestsPerSecond < $1.requestsPerSecond }
    secondRuns.sort { $0.requestsPerSecond < $1.requestsPerSecond }
    return (firstRuns[rounds / 2], secondRuns[rounds / 2])
}

func pinnedBenchmarkStore(trustSystem: Bool = false) throws -> PinStore {
    try PinStore(configuration: .init(
        serviceURL: URL(string: "https://pins.bench.pinstore.test/list.json")!,
        publicKey: try String(contentsOf: fixtures.appendingPathComponent("keys/list-signing.pub.b64"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines),
        identifier: "pinned-session-bench",
        fallbackData: try Data(contentsOf: fixtures.appendingPathComponent("lists/static-good.json")),
        storageDirectory: scratchDirectory()))
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

/// Child mode: the first request of a fresh process, from making the session to the body, in
/// microseconds; the pinned session trusts the system store (the test root is in it for the run).
func pinnedSessionColdChild(_ mode: String, _ url: URL) async throws {
    let clock = ContinuousClock()
    let store = mode == "pinned" ? try pinnedBenchmarkStore() : nil
    let started = clock.now
    let session = store.map { URLSession(configuration: .pinned(by: $0, trustRoots: .system)) } ?? URLSession(configuration: .default)
    let (data, _) = try await session.data(from: url)
    let elapsed = clock.now - started
    print(elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000, data.count)
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

/// Plain and pinned URLSession against nginx, as result rows.
func pinnedSessionBenchmarkRows(rounds: Int = 7) async throws -> [Row] {
    let nginx = try LoopbackNginx()
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
    let pinned = URLSession(configuration: .pinned(by: try pinnedBenchmarkStore(), trustRoots: roots, basedOn: pinnedBase))

    var rows: [Row] = []
    // Handshakes: the first 300 sequential requests of each client on a cold session.
    progress("handshakes")
    // New connection serials after each client's run (a log line can land late, so serials
    // are compared, not line counts).
    var before = nginx.connectionSerials()
    _ = try await run(plain, small, count: 300, concurrency: 1)
    try await Task.sleep(for: .milliseconds(200))
    let plainHandshakes = nginx.connectionSerials().subtracting(before).count
    before = nginx.connectionSerials()
    _ = try await run(pinned, small, count: 300, concurrency: 1)
    try await Task.sleep(for: .milliseconds(200))
    let pinnedHandshakes = nginx.connectionSerials().subtracting(before).count

    progress("sequential")
    let (plainSequential, pinnedSequential) = try await medianRuns(plain, pinned, small, count: 300, concurrency: 1, rounds: rounds)
    progress("concurrent")
    let (plainConcurrent, pinnedConcurrent) = try await medianRuns(plain, pinned, small, count: 300, concurrency: 16, rounds: rounds)

    func figures(_ run: RunFigures) -> String {
        String(format: "%.0f req/s (p50 %.2f ms, p99 %.2f ms)", run.requestsPerSecond, run.p50, run.p99)
    }
    let sequentialRatio = pinnedSequential.requestsPerSecond / plainSequential.requestsPerSecond
    rows.append(Row(name: "pinned URLSession, 300 sequential 1 KiB GETs (nginx)", value: figures(pinnedSequential),
                    baseline: "plain URLSession " + figures(plainSequential), ratio: String(format: "%.2fx", sequentialRatio),
                    target: ">= 1.0x", met: sequentialRatio >= 1.0))
    let concurrentRatio = pinnedConcurrent.requestsPerSecond / plainConcurrent.requestsPerSecond
    rows.append(Row(name: "pinned URLSession, 300 GETs 16 concurrent (nginx)", value: figures(pinnedConcurrent),
                    baseline: "plain URLSession " + figures(plainConcurrent), ratio: String(format: "%.2fx", concurrentRatio),
                    target: ">= 1.5x", met: concurrentRatio >= 1.5))
    rows.append(Row(name: "TLS handshakes nginx saw, 300 sequential (cold session)", value: "\(pinnedHandshakes)",
                    baseline: "plain URLSession \(plainHandshakes)", ratio: "-", target: "<= 2", met: pinnedHandshakes <= 2))

    progress("cold")
    // Cold: the median of 9 fresh processes each, the two clients alternating.
    var coldSamples: [String: [Int]] = [:]
    for _ in 0..<9 {
        for mode in ["plain", "pinned"] {
            if let sample = childPeak(mode, small, kind: "session-cold")?.peak { coldSamples[mode, default: []].append(sample) }
        }
    }
    func cold(_ mode: String) -> Double? {
        guard let samples = coldSamples[mode]?.sorted(), !samples.isEmpty else { return nil }
        return Double(samples[samples.count / 2]) / 1000
    }
    if let pinnedCold = cold("pinned"), let plainCold = cold("plain") {
        rows.append(Row(name: "first request of a process, system trust store", value: String(format: "pinned %.1f ms", pinnedCold),
                        baseline: String(format: "plain URLSession %.1f ms", plainCold), ratio: String(format: "%.2fx", pinnedCold / plainCold),
                        target: "<= 1.0x", met: pinnedCold <= plainCold))
    }

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
