import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// Three publishers, threshold 2, one shared proposals folder.
@Suite struct VantagePointTests {
    struct Vantage {
        let fixture: PublisherFixture
        let publisher: Publisher
        let prober: PresentingProber
    }

    /// `crlSections[i]`, when given, is vantage point i's `crl` section file.
    static func vantages(pki: TestPKI, shared: URL, clock: TestClock, crlSections: [String]? = nil) throws -> [Vantage] {
        let fixtures = try (0..<3).map { _ in try PublisherFixture(pki: pki) }
        let keys = try fixtures.map { try $0.key.publicKey.x963Representation.base64EncodedString() }
        return try fixtures.enumerated().map { index, fixture in
            let others = keys.enumerated().filter { $0.offset != index }.map { "\"\($0.element)\"" }.joined(separator: ", ")
            var crl = ""
            if let section = crlSections?[index] {
                try PublisherCRLSectionTests.writeSection(section, in: fixture)
                crl = PublisherCRLSectionTests.file
            }
            let file = try fixture.file(#", "threshold": 2, "otherPublisherKeys": [\#(others)], "vantagePoint": {"name": "v\#(index)", "proposalsFolder": "\#(shared.path)"}"# + crl)
            let prober = PresentingProber(trustRoots: .anchors([pki.root, pki.impostorRoot]), clock: clock)
            prober.present(["127.0.0.1:443": pki.leaf.chainDER])
            return Vantage(fixture: fixture, publisher: try Publisher(file: file, prober: prober, clock: clock), prober: prober)
        }
    }

    static func probeThreeTimes(_ vantages: [Vantage], clock: TestClock) async {
        for step in 0..<3 {
            if step > 0 { clock.advance(600) }
            for vantage in vantages { await vantage.publisher.probe() }
        }
    }

    @Test func aCertificateSeenByOneVantagePointOnlyIsNotPublishedAndOneSeenByTwoIs() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("proposals-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: shared) }
        let clock = TestClock()
        let vantages = try Self.vantages(pki: pki, shared: shared, clock: clock)
        defer { vantages.forEach { $0.fixture.cleanUp() } }
        // v1 is on an intercepted path: it sees the impostor, never the genuine leaf; v2 has not probed yet.
        vantages[1].prober.present(["127.0.0.1:443": pki.impostor.chainDER])
        await Self.probeThreeTimes([vantages[0], vantages[1]], clock: clock)
        await vantages[0].publisher.cycle()
        await vantages[1].publisher.cycle()
        #expect(SharedProposals(medium: FolderMedium(url: shared)).lists(1).objects.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: vantages[0].fixture.listURL.path))

        // v2 sees the genuine leaf K times by itself: it co-signs, and the list is published.
        await Self.probeThreeTimes([vantages[2]], clock: clock)
        await vantages[2].publisher.cycle()
        await vantages[0].publisher.cycle()
        let published = try Data(contentsOf: vantages[2].fixture.listURL)
        #expect(try Data(contentsOf: vantages[0].fixture.listURL) == published)
        let keys = try vantages.map { try $0.fixture.key.publicKey }
        let checked = try ListAcceptance.checkPublishable(published, keys: keys, threshold: 2, previousVersion: nil, previousTimestamp: nil, at: clock.now())
        #expect(checked.entries.map(\.fingerprint) == [pki.leaf.certificate.fingerprint])
    }

    @Test func aProposalWhoseCRLSectionDiffersIsNotCoSignedAndOneThatMatchesIs() async throws {
        // v0 and v1 see the same genuine leaf, but v1's publication file turns the host's CRL
        // check down to reportOnly: v0's proposal (enforce) is not v1's to sign; v2 agrees with v0.
        let pki = try TestPKI(hosts: ["localhost"])
        let shared = FileManager.default.temporaryDirectory.appendingPathComponent("proposals-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: shared) }
        let clock = TestClock()
        let enforce = #"{"hosts": [{"name": "localhost", "mode": "enforceSoftFail"}]}"#
        let vantages = try Self.vantages(pki: pki, shared: shared, clock: clock,
                                         crlSections: [enforce, #"{"hosts": [{"name": "localhost", "mode": "reportOnly"}]}"#, enforce])
        defer { vantages.forEach { $0.fixture.cleanUp() } }
        await Self.probeThreeTimes([vantages[0], vantages[1]], clock: clock)
        await vantages[0].publisher.cycle()
        await vantages[1].publisher.cycle()
        await vantages[0].publisher.cycle()
        #expect(SharedProposals(medium: FolderMedium(url: shared)).lists(1).objects.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: vantages[0].fixture.listURL.path))

        await Self.probeThreeTimes([vantages[2]], clock: clock)
        await vantages[2].publisher.cycle()
        await vantages[0].publisher.cycle()
        let published = try Data(contentsOf: vantages[0].fixture.listURL)
        #expect(Publisher.crl(in: published) == .some(CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "localhost", mode: "enforceSoftFail")])))
    }
}
