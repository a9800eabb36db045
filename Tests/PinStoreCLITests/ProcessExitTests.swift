import Foundation
import PinStore
import PinStoreSigning
import PinStoreDevServer
import PinStoreTestSupport
import Testing

/// A server process may call `exit` while its store verifies a list on other threads (a
/// scheduled download during shutdown). Exiting must never crash: OpenSSL's own exit-time
/// cleanup used to free the locks those threads were using (7 crashes in 40 exits here).
struct ProcessExitTests {
    static let exits = 40

    @Test(.timeLimit(.minutes(10)))
    func exitingWhileListsAreVerifiedOnOtherThreadsNeverCrashes() async throws {
        let child = try #require(CrashDrillTests.childPath, "PinStoreCrashDrillChild was not built")
        let publicKey = try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines)
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        // Large enough that a verification (every core) is under way most of the time.
        let list = try signer.staticList((0..<1_500).map {
            FingerprintEntry(name: "host\($0).pinstore.test", fingerprint: Data(repeating: UInt8($0 % 256), count: 31) + [UInt8($0 / 256)],
                             expires: 4_102_444_799)
        })
        let server = try await ListServer.start { _ in ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: list) }
        let url = "http://127.0.0.1:\(server.port)/list.json"
        var failures: [String] = []
        for round in 0..<Self.exits {
            let directory = try TestResources.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let status = try await Self.run(child, [directory.path, url, publicKey, "\(Int.random(in: 20...100))"])
            if status != 0 { failures.append("round \(round): exit status \(status)") }
        }
        try await server.shutdown()
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Runs the child to its end; its termination status (a signal shows as 128 + signal).
    static func run(_ executable: String, _ arguments: [String]) async throws -> Int32 {
        await (try ChildProcess(executable, arguments, output: .discard)).exitStatus()
    }
}
