import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// The publication file's `crl`: a section file of per-host CRL modes that the publisher signs
/// into every list it publishes, which stores then apply.
@Suite struct PublisherCRLSectionTests {
    static func writeSection(_ json: String, in fixture: PublisherFixture) throws {
        try Data(json.utf8).write(to: fixture.folder.appendingPathComponent("crl.json"))
    }

    static let file = #", "crl": "crl.json""#

    @Test func aCRLSectionInThePublicationFileReachesTheListAndTheStoreAppliesIt() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        try Self.writeSection(#"{"hosts": [{"name": "localhost", "mode": "enforceSoftFail"}]}"#, in: fixture)
        let clock = TestClock()
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: try fixture.file(Self.file))
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())

        let store = try await fixture.storeReadingTheList()
        // The leaf view cannot verify a CRL: a host under enforce is refused there, which shows the mode arrived.
        let decision = store.leafDecision(leaf: fixture.pki.leaf.certificate.derRepresentation, peerAddress: "127.0.0.1")
        #expect(decision.failure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }

    @Test func aCRLSectionAddedToThePublicationFileGoesOutAtTheNextCycle() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (first, _) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(first, clock: clock)
        #expect(await first.cycle())
        #expect(Publisher.crl(in: try Data(contentsOf: fixture.listURL)) == .some(nil))

        try Self.writeSection(#"{"hosts": [{"name": "localhost", "mode": "reportOnly"}]}"#, in: fixture)
        clock.advance(60)
        let (second, _) = try PublisherTests.publisher(fixture, clock: clock, file: try fixture.file(Self.file))
        #expect(await second.cycle())
        let published = Publisher.crl(in: try Data(contentsOf: fixture.listURL))
        #expect(published == .some(CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "localhost", mode: "reportOnly")])))
    }

    @Test func aProposalWhoseCRLSectionDiffersFromThisVantagePointsIsNotCoSigned() {
        let ours = CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "a.example", mode: "enforceSoftFail"),
                                            CTLogList.Wire.Host(name: "*.b.example", mode: "reportOnly")])
        #expect(Publisher.sameCRL(ours, CRLHostList.Wire(hosts: ours.hosts.reversed())))
        #expect(!Publisher.sameCRL(nil, ours))
        #expect(!Publisher.sameCRL(ours, nil))
        #expect(!Publisher.sameCRL(CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "a.example", mode: "off"),
                                                            CTLogList.Wire.Host(name: "*.b.example", mode: "reportOnly")]), ours))
        #expect(Publisher.sameCRL(nil, nil))
    }

    @Test func aCRLSectionStoresWouldRefuseIsRefusedAtSetup() throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        try Self.writeSection(#"{"hosts": [{"name": "localhost", "mode": "strict"}]}"#, in: fixture)
        let error = #expect(throws: PublisherError.self) { try PublisherSetup(file: try fixture.file(Self.file)) }
        #expect(error?.code == .unreadableReference)
        #expect(error?.reason.contains(#"mode "strict" is not one of"#) == true)
    }
}
