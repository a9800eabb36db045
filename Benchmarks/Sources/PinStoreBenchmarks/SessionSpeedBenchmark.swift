#if canImport(FoundationNetworking)
import AsyncHTTPClient
import Foundation
import FoundationNetworking
import NIOSSL
import PinStore
import PinStoreNIO

// Issue 33: what a kept-alive request through the pinned URLSession costs, against
// AsyncHTTPClient (the target) and plain URLSession (no regression), in one run.
//
// `session-speed [ROUNDS]`: requests/s of the three clients against one loopback nginx, rounds
// interleaved in rotating order, sequential and 16 concurrent, 1 KiB and 1 MiB bodies, as ratios.
// `session-instructions [SMALL LARGE]`: instructions and heap allocations per request under
// callgrind (no hardware counters on this VM; steady on a busy machine), for the pinned
// session, AsyncHTTPClient and a URLProtocol answering from memory (FoundationNetworking's
// floor). Each client runs `session-profile SMALL` and `session-profile LARGE` (against one nginx
// this process starts) in a copy of
// this binary without DWARF (valgrind cannot read Swift 6's DWARF 5), and the difference of the
// two runs, divided by LARGE - SMALL, is one request: start-up, nginx and the handshake cancel out.

/// Requests/s ratios: pinned URLSession against AsyncHTTPClient and plain URLSession.
func sessionSpeedRows(rounds: Int = 7) async throws -> [Row] {
    let nginx = try LoopbackNginx.start()
    defer { nginx.stop() }
    let trust = try SystemTrustForBenchmark()
    defer { trust.restore() }
    let roots = TrustRoots.anchors(try X509Certificate.certificates(pem: String(contentsOf: benchmarkFixtures.appendingPathComponent("pki/root-ca.pem"), encoding: .utf8)))

    let plainConfiguration = URLSessionConfiguration.default
    plainConfiguration.httpMaximumConnectionsPerHost = 16
    let pinnedBase = URLSessionConfiguration.default
    pinnedBase.httpMaximumConnectionsPerHost = 16
    let pinned = URLSession(configuration: .pinned(by: try pinnedBenchmarkStore(), trustRoots: roots, basedOn: pinnedBase))
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(benchmarkFixtures.appendingPathComponent("pki/root-ca.pem").path))
    var ahcConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
    ahcConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
    ahcConfiguration.httpVersion = .http1Only
    let ahc = HTTPClient(eventLoopGroupProvider: .singleton, configuration: ahcConfiguration)
    do {
        let rows = try await speedRows(ahc: ahc, pinned: pinned, plain: URLSession(configuration: plainConfiguration), nginx: nginx, rounds: rounds)
        try await ahc.shutdown()
        return rows
    } catch {
        try? await ahc.shutdown()
        throw error
    }
}

private func speedRows(ahc: HTTPClient, pinned: URLSession, plain: URLSession, nginx: LoopbackNginx, rounds: Int) async throws -> [Row] {
    let clients: [BenchClient] = [.session(pinned), .asyncHTTPClient(ahc), .session(plain)]

    var rows: [Row] = []
    for (path, size, count) in [("small", 1024, 300), ("medium", 1 << 20, 60)] {
        let url = URL(string: "https://localhost:\(nginx.port)/\(path)")!
        // Every client's connections open before the rounds, so no round pays a handshake.
        for client in clients { _ = try await runRequests(client, url, count: 32, concurrency: 16, expectedSize: size) }
        for concurrency in [1, 16] {
            progress("\(path), \(concurrency) at a time")
            let results = try await medianRuns(clients, url, count: count, concurrency: concurrency, rounds: rounds, expectedSize: size)
            let (pinnedRate, ahcRate, plainRate) = (results[0].median.requestsPerSecond, results[1].median.requestsPerSecond,
                                                     results[2].median.requestsPerSecond)
            let label = "\(size == 1024 ? "1 KiB" : "1 MiB"), \(concurrency == 1 ? "sequential" : "16 concurrent")"
            let target = concurrency == 1 ? 0.8 : 0.6
            func spread(_ index: Int) -> String {
                String(format: "%.0f req/s (%.0f-%.0f)", results[index].median.requestsPerSecond, results[index].slowest, results[index].fastest)
            }
            rows.append(Row(name: "pinned URLSession vs AsyncHTTPClient, \(label)", value: spread(0),
                            baseline: "AsyncHTTPClient " + spread(1), ratio: String(format: "%.2fx", pinnedRate / ahcRate),
                            target: String(format: ">= %.1fx", target), met: pinnedRate / ahcRate >= target))
            rows.append(Row(name: "pinned URLSession vs plain URLSession, \(label)", value: String(format: "%.0f req/s", pinnedRate),
                            baseline: "plain URLSession " + spread(2), ratio: String(format: "%.2fx", pinnedRate / plainRate),
                            target: ">= 1.0x", met: pinnedRate >= plainRate))
        }
    }
    return rows
}

/// Instructions and allocations per request under callgrind: pinned URLSession, AsyncHTTPClient,
/// and the in-memory URLProtocol (FoundationNetworking's own floor).
func sessionInstructionRows(small: Int = 100, large: Int = 1_000) throws -> [Row] {
    let callgrind = try Callgrind()
    // nginx runs here, outside valgrind: a process under valgrind cannot start one.
    let nginx = try LoopbackNginx.start()
    defer { nginx.stop() }
    var perRequest: [String: CallgrindCounts] = [:]
    for client in ["pinned", "ahc", "memory"] {
        perRequest[client] = try callgrind.perRequest(small: small, large: large, label: client) { requests in
            ["session-profile", String(requests), client, String(nginx.port)]
        }
    }
    guard let pinned = perRequest["pinned"], let ahc = perRequest["ahc"], let memory = perRequest["memory"] else { return [] }
    func thousands(_ value: Int) -> String { String(format: "%.1f k", Double(value) / 1_000) }
    return [
        Row(name: "instructions per 1 KiB GET (callgrind), pinned URLSession", value: thousands(pinned.instructions),
            baseline: "AsyncHTTPClient \(thousands(ahc.instructions))", ratio: String(format: "%.2fx", Double(pinned.instructions) / Double(ahc.instructions)),
            target: "report", met: nil),
        Row(name: "  FoundationNetworking's floor: URLProtocol answering from memory", value: thousands(memory.instructions),
            baseline: "pinned minus floor \(thousands(pinned.instructions - memory.instructions))",
            ratio: String(format: "%.2fx", Double(memory.instructions) / Double(ahc.instructions)), target: "report", met: nil),
        Row(name: "heap allocations per 1 KiB GET, pinned URLSession", value: "\(pinned.allocations)",
            baseline: "AsyncHTTPClient \(ahc.allocations), floor \(memory.allocations)",
            ratio: String(format: "%.2fx", Double(pinned.allocations) / Double(ahc.allocations)), target: "report", met: nil),
    ]
}

/// This binary under callgrind: a copy of it without DWARF (valgrind 3.19 cannot read the DWARF
/// 5 that Swift 6 emits) in a scratch folder, run in a child process per count.
struct Callgrind {
    let valgrind: String
    let binary: URL
    let directory: URL

    /// Finds valgrind and makes the stripped copy.
    init() throws {
        let valgrind = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let valgrind else { throw PinnedSessionBenchmarkError.setup("valgrind is not installed (apt-get install -y valgrind)") }
        self.valgrind = valgrind
        directory = scratchDirectory()
        binary = directory.appendingPathComponent("PinStoreBenchmarks-nodebug")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath(), to: binary)
        try runTool("/usr/bin/strip", ["--strip-debug", binary.path])
    }

    /// One request's counts: the binary run with `arguments(small)` and `arguments(large)`
    /// (a mode doing that many requests after the same warm-up), the difference of the two runs
    /// divided by `large - small`, so that start-up and warm-up cancel out.
    func perRequest(small: Int, large: Int, label: String, arguments: (Int) -> [String]) throws -> CallgrindCounts {
        var counts: [CallgrindCounts] = []
        for requests in [small, large] {
            progress("callgrind: \(label), \(requests) requests")
            let output = directory.appendingPathComponent("callgrind.\(label).\(requests)")
            try runTool(valgrind, ["--tool=callgrind", "--compress-strings=no", "--compress-pos=no",
                                   "--callgrind-out-file=\(output.path)", binary.path] + arguments(requests),
                        log: output.appendingPathExtension("log"))
            counts.append(try CallgrindCounts(file: output))
        }
        let difference = Double(large - small)
        return CallgrindCounts(instructions: Int((Double(counts[1].instructions - counts[0].instructions) / difference).rounded()),
                               allocations: Int((Double(counts[1].allocations - counts[0].allocations) / difference).rounded()))
    }
}

/// What one callgrind output file counts: instructions executed (every thread), and calls to
/// the C allocator (`malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`; Swift
/// objects come from `malloc` too).
struct CallgrindCounts {
    var instructions: Int
    var allocations: Int

    static let allocators: Set<Substring> = ["malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"]

    init(instructions: Int, allocations: Int) {
        self.instructions = instructions
        self.allocations = allocations
    }

    /// Reads an output of `--compress-strings=no --compress-pos=no`: `totals:` (or `summary:`)
    /// is the instruction count; each `calls=N ...` line after a `cfn=NAME` line is N calls to NAME.
    init(file: URL) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        var instructions: Int?
        var allocations = 0
        var callee: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("cfn=") {
                callee = line.dropFirst(4)
            } else if line.hasPrefix("calls="), Self.allocators.contains(callee) {
                allocations += Int(line.dropFirst(6).prefix { $0 != " " }) ?? 0
            } else if line.hasPrefix("totals:") || line.hasPrefix("summary:") {
                instructions = Int(line.split(separator: " ").last ?? "")
            }
        }
        guard let instructions else { throw PinnedSessionBenchmarkError.setup("no instruction total in \(file.path)") }
        self.instructions = instructions
        self.allocations = allocations
    }
}

/// Runs a tool to its end; its standard error goes to `log` when given, and the end of it into
/// the error when the tool fails (the scratch folder goes when the process exits).
private func runTool(_ path: String, _ arguments: [String], log: URL? = nil) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    if let log, FileManager.default.createFile(atPath: log.path, contents: nil), let handle = try? FileHandle(forWritingTo: log) {
        process.standardError = handle
    } else {
        process.standardError = FileHandle.nullDevice
    }
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PinnedSessionBenchmarkError.setup("\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)"
                                                + (log.flatMap { try? String(contentsOf: $0, encoding: .utf8) }.map { ":\n" + $0.suffix(2_000) } ?? ""))
    }
}
#endif
