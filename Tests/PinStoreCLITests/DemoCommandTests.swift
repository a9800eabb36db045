import Foundation
import PinStoreTestSupport
import Testing

/// `pinstore demo`: the whole flow on loopback, as a newcomer runs it.
struct DemoCommandTests {
    static let fixtures = TestResources.fixtures.path

    /// `--transport nio` is the macOS default (PinningTLSVerifier on SwiftNIO): run here, it is
    /// the same code a Mac runs.
    @Test(arguments: [[], ["--challenge-mode"], ["--transport", "nio"]])
    func demoAllowsThePinnedServerAndRefusesTheImpostor(extra: [String]) async throws {
        let result = try await PinstoreBinary.run(["demo", "--fixtures", Self.fixtures] + extra)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let rows = result.stdout.split(separator: "\n")
        #expect(rows.contains { $0.hasPrefix("real API") && $0.contains("  allowed  ") && $0.contains("HTTP 200") })
        #expect(rows.contains { $0.hasPrefix("impostor") && $0.contains("  refused  ") && $0.contains("got 0 request") })
        #expect(rows.contains { $0.hasPrefix("fetch + verify + store") && $0.contains("  ok  ") })
        // No bound on its duration here (the 30 s budget was hit at 41-44 s beside other builds,
        // with nothing wrong): the rows above are the events that matter.
    }

    @Test func demoWithoutFixturesFailsWithOneLine() async throws {
        let result = try await PinstoreBinary.run(["demo", "--fixtures", "/nonexistent/Fixtures"])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("--fixtures"))
    }
}
