import Foundation
import PinStore
import PinStoreTesting
import Testing

/// The one-call fixture: a store configured against the kit's servers.
@Suite struct PinningTestFixtureTests {
    @Test(arguments: [TestListMode.staticList, .challenge]) func storeTrustsTheGenuineLeafAfterStart(mode: TestListMode) async throws {
        try await PinningTestFixture.withFixture(mode: mode) { fixture in
            #expect(fixture.store.matchPins(commonName: "localhost", certificateChain: fixture.pki.leaf.chainDER) == .trusted)
        }
    }

    @Test func storeRefusesTheImpostor() async throws {
        try await PinningTestFixture.withFixture { fixture in
            #expect(fixture.store.matchPins(commonName: "localhost", certificateChain: fixture.pki.impostor.chainDER) == .untrusted)
        }
    }

    @Test func impostorPassesTheFixturesTrustRoots() async throws {
        try await PinningTestFixture.withFixture { fixture in
            _ = try ChainValidator(trustRoots: fixture.trustRoots).validate(chain: fixture.pki.impostor.chainDER, hostname: "localhost")
        }
    }

    @Test func storeReadsTheListInTheChosenMode() async throws {
        try await PinningTestFixture.withFixture(mode: .challenge) { fixture in
            #expect(fixture.store.configuration.useChallenge)
            #expect(fixture.listServer.mode == .challenge)
        }
    }

    @Test func rotationPublishedThroughTheFixtureReachesTheStore() async throws {
        // The download's deadline as a hang guard: the fixture's 10 s ran out for a loopback
        // download beside other builds and a CPU hog, and the update came back `networkError`.
        try await PinningTestFixture.withFixture(configure: { $0.requestTimeout = 600 }) { fixture in
            let renewed = try fixture.pki.issueLeaf(for: fixture.hosts)
            let result = try await fixture.publish(pinning: [renewed.certificate])
            #expect(result == .ok)
            #expect(fixture.store.matchPins(commonName: "localhost", certificateChain: renewed.chainDER) == .trusted)
            #expect(fixture.store.matchPins(commonName: "localhost", certificateChain: fixture.pki.leaf.chainDER) == .untrusted)
        }
    }

    @Test func configureClosureChangesTheStoresConfiguration() async throws {
        let fixture = try await PinningTestFixture.start { $0.expectedCommonNames = ["localhost"] }
        defer { Task { try? await fixture.shutdown() } }
        #expect(fixture.store.configuration.expectedCommonNames == ["localhost"])
    }

    @Test func shutdownRemovesTheStoresFolder() async throws {
        let fixture = try await PinningTestFixture.start()
        #expect(FileManager.default.fileExists(atPath: fixture.storageDirectory.path))
        try await fixture.shutdown()
        #expect(!FileManager.default.fileExists(atPath: fixture.storageDirectory.path))
    }
}
