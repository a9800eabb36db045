import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// A partner that requires Certificate Transparency, end to end: the real prober against TLS
/// servers on 127.0.0.1 presenting leaves with SCTs from test logs (made through OpenSSL), the
/// publication file's CT section naming those logs, and a client that downloads what was
/// published. An impostor that holds a certificate from the partner's own allowed CA but never
/// logged it is what CT exists to expose: it must be staged, never published.
@Suite(.timeLimit(.minutes(15))) struct PublisherCertificateTransparencyTests {
    static let host = EndToEndFixture.host

    /// The partner's leaves: the first, logged to both logs; a rotation, logged as well; and an
    /// impostor leaf from the same CA with a single SCT (one operator: not compliant).
    struct World {
        let pki: TestPKI
        let logs: [TestCTLog]
        let first: TestIdentity
        let loggedRotation: TestIdentity
        let unloggedImpostor: TestIdentity

        init() throws {
            pki = try TestPKI(hosts: [PublisherCertificateTransparencyTests.host])
            logs = [try TestCTLog(keyType: .p256), try TestCTLog(keyType: .p256)]
            let both = [TestSCT(log: logs[0]), TestSCT(log: logs[1])]
            first = try pki.issueLeaf(for: [PublisherCertificateTransparencyTests.host], embedding: both)
            loggedRotation = try pki.issueLeaf(for: [PublisherCertificateTransparencyTests.host], embedding: both)
            unloggedImpostor = try pki.issueLeaf(for: [PublisherCertificateTransparencyTests.host], embedding: [TestSCT(log: logs[0])])
        }

        /// A publisher folder whose partner requires CT against a section naming both logs.
        func fixture(serving port: Int) throws -> EndToEndFixture {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-publisher-ct-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let section = TestCTLogList(logs: [.init(logs[0], operatorName: "Operator A"), .init(logs[1], operatorName: "Operator B")])
            try section.json().write(to: directory.appendingPathComponent("ct-section.json"))
            return try EndToEndFixture(pki: pki, ports: [port], directory: directory,
                                       settings: ["certificateTransparencySection": "ct-section.json"],
                                       partner: ["requireCertificateTransparency": true])
        }
    }

    /// Publishes the leaf at `port`, then serves `next` for twice K rounds; returns the client
    /// after an update and what the publisher staged for `next`.
    static func rotate(to next: TestIdentity, in world: World) async throws -> (published: Bool, staged: [StagedChange]) {
        try await PublisherEndToEndTests.withServers([world.first, next]) { servers in
            let fixture = try world.fixture(serving: servers[0].port)
            let publisher = try fixture.publisher()
            for _ in 0...PublisherEndToEndTests.sightings { await fixture.round(publisher) }
            let client = try await PinnedClient(listFile: fixture.listURL, publicKeys: [try fixture.publicKeyBase64],
                                                trustRoots: world.pki.trustRoots, clock: fixture.clock)
            try #require(await client.update() == .ok, "the first, logged leaf was not published")
            try #require(PublisherEndToEndTests.listPins(client, world.first))

            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(2 * PublisherEndToEndTests.sightings) { await fixture.round(publisher) }
            _ = await client.update()
            let published = PublisherEndToEndTests.listPins(client, next)
            let staged = await publisher.pending().filter { $0.leafSHA256 == next.certificate.fingerprintBase64 }
            try await client.shutdown()
            return (published, staged)
        }
    }

    @Test func anUnloggedCertificateFromTheAllowedCAIsStagedNotPublished() async throws {
        let world = try World()
        let (published, staged) = try await Self.rotate(to: world.unloggedImpostor, in: world)
        #expect(!published)
        #expect(staged.count == 1)
        #expect(staged.first.map { if case .notCTCompliant = $0.outcome { true } else { false } } == true,
                "\(staged.map { "\($0.outcome)" })")
        #expect(staged.first?.needsPerson == true)
    }

    @Test func aLoggedRotationFromTheAllowedCAIsPublished() async throws {
        let world = try World()
        let (published, staged) = try await Self.rotate(to: world.loggedRotation, in: world)
        #expect(published)
        #expect(staged.isEmpty)
    }
}
