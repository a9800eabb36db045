import AsyncHTTPClient
import Foundation
import NIOCore
import PinStoreTestSupport
import Testing

/// The comparison client of `scripts/hostile-servers.sh` (`CLIENT=ahc`): plain AsyncHTTPClient
/// (trusting the test root, unpinned) against the same hostile servers as the pinned URLSession
/// (`HostileServerFigures` in PinStoreNIOTests), with the same bounds: a 5 s read timeout, a 10 s
/// deadline, bodies collected whole up to 512 MiB. Disabled unless `PINSTORE_HOSTILE_AHC_URL`
/// is set; prints one `hostile-figures` line like the pinned client.
@Suite struct HostileServerFiguresAHC {
    static let environment = ProcessInfo.processInfo.environment

    @Test(.enabled(if: environment["PINSTORE_HOSTILE_AHC_URL"] != nil))
    func asyncHTTPClient() async throws {
        let url = try #require(Self.environment["PINSTORE_HOSTILE_AHC_URL"])
        let parallel = Int(Self.environment["PINSTORE_HOSTILE_PARALLEL"] ?? "") ?? 1
        var configuration = HTTPClient.Configuration(tlsConfiguration: try Pins.tls(),
                                                     timeout: .init(connect: .seconds(5), read: .seconds(5)))
        configuration.dnsOverride = Pins.loopbackOverride()
        let client = HTTPClient(eventLoopGroup: Pins.group, configuration: configuration)
        let baseline = ProcessFigures.residentBytes()
        let cpu = ProcessFigures.cpuSeconds()
        let clock = ContinuousClock()
        let started = clock.now
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<parallel {
                group.addTask {
                    do {
                        let response = try await client.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(10))
                        let body = try await response.body.collect(upTo: 512 << 20)
                        return "succeeded: \(response.status.code), \(body.readableBytes) bytes"
                    } catch {
                        return "failed after \(clock.now - started): \(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        print(ProcessFigures.report(path: URL(string: url)?.path ?? url, parallel: parallel, elapsed: clock.now - started,
                                    baseline: baseline, cpuBefore: cpu))
        for outcome in outcomes { print("hostile-figures outcome: \(outcome)") }
        try await client.shutdown()
        #expect(outcomes.count == parallel)
    }
}
