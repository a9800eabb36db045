#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import NIOCore
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// The long variants of ``HostileServerTests``, run by `scripts/hostile-servers.sh` only (both
/// tests are disabled unless their environment variable is set): the server and the client in
/// separate processes, so that the client's peak RSS and CPU time are its own.
///
/// - `PINSTORE_HOSTILE_SERVE=<case>`: serves one case on 127.0.0.1, writes the port to
///   `PINSTORE_HOSTILE_PORT_FILE`, and stops after `PINSTORE_HOSTILE_SECONDS` (default 40).
/// - `PINSTORE_HOSTILE_URL=<url>`: one pinned URLSession runs `PINSTORE_HOSTILE_PARALLEL`
///   completion-handler requests at once (default 1) with a 5 s request and 10 s resource
///   timeout, and prints one `hostile-figures` line: time to fail, peak RSS growth over the
///   baseline, CPU seconds, and each error.
@Suite struct HostileServerFigures {
    static let environment = ProcessInfo.processInfo.environment

    /// The cases: the ``HostileServer/Behaviour`` names, and the endless bodies
    /// (`endlessBody`, `endlessBodyHTTP2`) of ``TestServer``'s `/stream?mib=0`.
    @Test(.enabled(if: environment["PINSTORE_HOSTILE_SERVE"] != nil))
    func serve() async throws {
        let name = try #require(Self.environment["PINSTORE_HOSTILE_SERVE"])
        let seconds = Int64(Self.environment["PINSTORE_HOSTILE_SECONDS"] ?? "") ?? 40
        let portFile = try #require(Self.environment["PINSTORE_HOSTILE_PORT_FILE"])
        let port: Int
        let stop: () async -> Void
        switch name {
        case "endlessBody":
            let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
            (port, stop) = (server.port, server.shutdown)
        case "endlessBodyHTTP2":
            let server = try await TestServer.http2(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
            (port, stop) = (server.port, server.shutdown)
        default:
            let behaviour = try #require(HostileServer.Behaviour.allCases.first { "\($0)" == name }, "no case named \(name)")
            let server = try await HostileServer.start(behaviour, byteLimit: 8 << 30, timeLimit: .seconds(seconds))
            (port, stop) = (server.port, server.shutdown)
        }
        try String(port).write(toFile: portFile, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .seconds(seconds))
        await stop()
        #expect(port > 0)
    }

    @Test(.enabled(if: environment["PINSTORE_HOSTILE_URL"] != nil))
    func pinnedClient() async throws {
        let url = try #require(URL(string: Self.environment["PINSTORE_HOSTILE_URL"] ?? ""))
        let parallel = Int(Self.environment["PINSTORE_HOSTILE_PARALLEL"] ?? "") ?? 1
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = 5
        base.timeoutIntervalForResource = 10
        let session = URLSession(configuration: .pinned(by: try Pins.good(), trustRoots: try Pins.anchors, updateOnEmpty: false, basedOn: base))
        let baseline = ProcessFigures.residentBytes()
        let cpu = ProcessFigures.cpuSeconds()
        let clock = ContinuousClock()
        let started = clock.now
        let errors = await withTaskGroup(of: String.self) { group in
            for _ in 0..<parallel {
                group.addTask {
                    do {
                        let (data, response) = try await session.data(from: url)
                        return "succeeded: \((response as? HTTPURLResponse)?.statusCode ?? 0), \(data.count) bytes"
                    } catch let error as URLError {
                        let underlying = error.userInfo[NSUnderlyingErrorKey].map { " / \($0)" } ?? ""
                        return "URLError(\(error.code.rawValue)) after \(clock.now - started)\(underlying): \(error.localizedDescription)"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        print(ProcessFigures.report(path: url.path, parallel: parallel, elapsed: clock.now - started, baseline: baseline, cpuBefore: cpu))
        for error in errors { print("hostile-figures outcome: \(error)") }
        #expect(errors.count == parallel)
    }
}
#endif
