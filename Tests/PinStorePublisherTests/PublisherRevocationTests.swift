import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// The publication file's `revocations`: a section file the publisher signs into every list it
/// publishes, which stores then apply.
@Suite struct PublisherRevocationTests {
    static func writeSection(_ revocations: [ListRevocations.Wire], in fixture: PublisherFixture) throws {
        try JSONEncoder().encode(revocations).write(to: fixture.folder.appendingPathComponent("revocations.json"))
    }

    @Test func aRevocationInThePublicationFileReachesTheListAndTheStoreRefusesIt() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        try Self.writeSection([.certificate(fixture.pki.leaf.certificate)], in: fixture)
        let clock = TestClock()
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: try fixture.file(#", "revocations": "revocations.json""#))
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())

        let store = try await fixture.storeReadingTheList()
        let decision = store.pinDecision(host: "localhost", validatedChain: fixture.pki.leaf.chainDER + [fixture.pki.root.derRepresentation])
        #expect(decision.failure?.reason.listRevocation?.kind == .certificate)
    }

    @Test func aRevocationAddedToThePublicationFileGoesOutAtTheNextCycleNotAtTheNextResigning() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (first, _) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(first, clock: clock)
        #expect(await first.cycle())
        let before = try Data(contentsOf: fixture.listURL)
        #expect(Publisher.revocations(in: before) == [])

        // The team adds a revocation and restarts the publisher a minute later (re-signing is a day away).
        try Self.writeSection([.certificate(fixture.pki.leaf.certificate)], in: fixture)
        clock.advance(60)
        let (second, _) = try PublisherTests.publisher(fixture, clock: clock, file: try fixture.file(#", "revocations": "revocations.json""#))
        #expect(await second.cycle())
        let after = try Data(contentsOf: fixture.listURL)
        #expect(Publisher.revocations(in: after)?.count == 1)
    }

    @Test func aProposalWhoseRevocationsDifferFromThisVantagePointsIsNotCoSigned() throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let ours: [ListRevocations.Wire] = [.certificate(fixture.pki.leaf.certificate)]
        #expect(Publisher.sameRevocations(ours, ours))
        #expect(!Publisher.sameRevocations([], ours))
        #expect(!Publisher.sameRevocations(ours + [.certificate(fixture.pki.intermediate)], ours))
    }

    @Test func aMalformedRevocationsFileIsRefusedAtSetup() throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        try Data(#"[{"kind": "key", "sha256": "AAAA"}]"#.utf8).write(to: fixture.folder.appendingPathComponent("revocations.json"))
        let error = #expect(throws: PublisherError.self) {
            try PublisherSetup(file: try fixture.file(#", "revocations": "revocations.json""#))
        }
        #expect(error?.code == .unreadableReference)
        #expect(error?.reason.contains("32-byte SHA-256") == true)
    }
}
