import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
import PinStoreTestSupport
@testable import PinStorePublisher

@Suite struct PublisherTests {
    /// A publisher over `fixture` whose prober presents the genuine leaf at one address.
    static func publisher(_ fixture: PublisherFixture, clock: TestClock, file: PublicationFile? = nil) throws -> (Publisher, PresentingProber) {
        let prober = PresentingProber(trustRoots: fixture.pki.trustRoots, clock: clock)
        prober.present(["127.0.0.1:443": fixture.pki.leaf.chainDER])
        return (try Publisher(file: try file ?? fixture.file(), prober: prober, clock: clock), prober)
    }

    /// K = 3 probes spanning T = 20 minutes.
    static func probeThreeTimes(_ publisher: Publisher, clock: TestClock) async {
        for step in 0..<3 {
            if step > 0 { clock.advance(600) }
            await publisher.probe()
        }
    }

    @Test func aCertificateSeenKTimesOverTIsPublishedAndAcceptedByTheRuntime() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try Self.publisher(fixture, clock: clock)
        await Self.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())
        let list = try Data(contentsOf: fixture.listURL)
        let checked = try ListAcceptance.checkPublishable(list, keys: [try fixture.key.publicKey], threshold: 1,
                                                          previousVersion: nil, previousTimestamp: nil, at: clock.now())
        #expect(checked.version == 1)
        #expect(checked.entries.map(\.fingerprint) == [fixture.pki.leaf.certificate.fingerprint])
    }

    @Test func aCertificateSeenOnceIsNotPublished() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try Self.publisher(fixture, clock: clock)
        await publisher.probe()
        await publisher.cycle()
        #expect(!FileManager.default.fileExists(atPath: fixture.listURL.path))
        #expect(await publisher.pending().map(\.outcome.code) == ["tooFewSightings"])
    }

    @Test func anImpostorFromAnotherCAIsStagedNotPublished() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let prober = PresentingProber(trustRoots: .anchors([pki.root, pki.impostorRoot]), clock: clock)
        prober.present(["127.0.0.1:443": pki.impostor.chainDER])
        let publisher = try Publisher(file: try fixture.file(), prober: prober, clock: clock)
        await Self.probeThreeTimes(publisher, clock: clock)
        await publisher.cycle()
        #expect(!FileManager.default.fileExists(atPath: fixture.listURL.path))
        #expect(await publisher.pending().map(\.outcome.code) == ["caNotAllowed"])
    }

    @Test func aRestartResumesFromTheStateFile() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (first, _) = try Self.publisher(fixture, clock: clock)
        await first.probe()
        clock.advance(600)
        await first.probe()
        clock.advance(600)
        let (second, _) = try Self.publisher(fixture, clock: clock)
        #expect(await second.state.partners["api"]?.certificates.first?.value.sightings == 2)
        await second.probe()
        #expect(await second.cycle())
        #expect(FileManager.default.fileExists(atPath: fixture.listURL.path))
    }

    @Test func theListIsResignedBeforeItExpiresWithNoChange() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try Self.publisher(fixture, clock: clock)
        await Self.probeThreeTimes(publisher, clock: clock)
        await publisher.cycle()
        let before = try Data(contentsOf: fixture.listURL)
        clock.advance(86_400)   // the default resignInterval
        await publisher.probe()
        #expect(await publisher.cycle())
        let after = try Data(contentsOf: fixture.listURL)
        let checked = try ListAcceptance.checkPublishable(after, keys: [try fixture.key.publicKey], threshold: 1,
                                                          previousVersion: 1, previousTimestamp: nil, at: clock.now())
        #expect(before != after)
        #expect(checked.version == 2)
    }

    @Test func aFailingSigningCommandLeavesTheLastGoodList() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try Self.publisher(fixture, clock: clock)
        await Self.probeThreeTimes(publisher, clock: clock)
        await publisher.cycle()
        let good = try Data(contentsOf: fixture.listURL)
        // The same state, now signed through a command that fails.
        let publicPEM = try fixture.key.publicKey.pemRepresentation
        try publicPEM.write(to: fixture.folder.appendingPathComponent("publisher.pub.pem"), atomically: true, encoding: .utf8)
        let failing = try fixture.file(signingKeys: #"[{"command": ["/bin/sh", "-c", "echo broken >&2; exit 3"], "publicKey": "publisher.pub.pem"}]"#)
        let (restarted, _) = try Self.publisher(fixture, clock: clock, file: failing)
        clock.advance(86_400)
        await restarted.probe()
        #expect(await restarted.cycle() == false)
        #expect(try Data(contentsOf: fixture.listURL) == good)
    }

    @Test func anEditedStateFileIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = StateFile(url: folder.appendingPathComponent("state.json"))
        var state = PublisherState()
        state.announcements = [.init(partnerID: "api", spkiSHA256: "x", announcedAt: Date(timeIntervalSince1970: 1), expires: Date(timeIntervalSince1970: 2))]
        try file.save(state)
        #expect(try file.load() == state)
        var bytes = try Data(contentsOf: file.url)
        bytes[bytes.count - 3] ^= 0x01
        try bytes.write(to: file.url)
        let error = #expect(throws: PublisherError.self) { _ = try file.load() }
        #expect(error?.code == .stateFile)
    }

    @Test func aGroupWritableStateFileIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = StateFile(url: folder.appendingPathComponent("state.json"))
        try file.save(PublisherState())
        try FileManager.default.setAttributes([.posixPermissions: 0o664], ofItemAtPath: file.url.path)
        let error = #expect(throws: PublisherError.self) { _ = try file.load() }
        #expect(error?.reason.contains("writable by group or others") == true)
    }

    @Test func aRefusedStateFileSaysWhatTheOperatorDoesNotWhatAStoreWould() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = StateFile(url: folder.appendingPathComponent("state.json"))
        try file.save(PublisherState())
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: file.url.path)
        let error = #expect(throws: PublisherError.self) { _ = try file.load() }
        let reason = error?.reason ?? ""
        #expect(reason.contains("chmod 600 \(file.url.path)"))
        #expect(!reason.contains("The store"))
        #expect(!reason.contains("next update"))
    }

    @Test func aStateFileThatIsASymbolicLinkIsRefusedWithWhatToDo() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = StateFile(url: folder.appendingPathComponent("real.json"))
        try real.save(PublisherState())
        let link = folder.appendingPathComponent("state.json")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real.url)
        let error = #expect(throws: PublisherError.self) { _ = try StateFile(url: link).load() }
        #expect(error?.code == .stateFile)
        #expect(error?.reason.contains("symbolic link") == true)
        #expect(error?.reason.contains("stateFolder") == true)
    }

    @Test func anAnnouncedKeyIsPublishedBeforeItIsDeployed() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try Self.publisher(fixture, clock: clock)
        await Self.probeThreeTimes(publisher, clock: clock)
        let next = try P256PrivateKey()
        let spki = try Publisher.spkiSHA256(ofKeyPEM: try next.publicKey.pemRepresentation)
        try await publisher.announce(partnerID: "api", spkiSHA256: spki)
        #expect(await publisher.cycle())
        let checked = try ListAcceptance.checkPublishable(try Data(contentsOf: fixture.listURL), keys: [try fixture.key.publicKey], threshold: 1,
                                                          previousVersion: nil, previousTimestamp: nil, at: clock.now())
        #expect(checked.entries.contains { $0.kind == .publicKey && $0.fingerprint.base64EncodedString() == spki })
        #expect(await publisher.status().partners.first?.rotationCase == "announcedRotation")
    }

    /// A team's own service makes the publisher from the file alone (the real TLS prober).
    @Test func aPublisherMadeFromTheFileAloneReportsItsPartnersBeforeTheFirstProbe() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let publisher = try Publisher(file: try fixture.file())
        let status = await publisher.status()
        #expect(status.partners.map(\.id) == ["api"])
        #expect(status.listVersion == nil)
        #expect(status.partners.first?.lastProbe == nil)
    }

    /// `pinstore publish announce` runs as its own process while `pinstore publish run` runs:
    /// the running service must act on it, and its own saves must not write it away.
    @Test func anAnnouncementByAnotherProcessSurvivesTheRunningPublishersSaves() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (running, _) = try Self.publisher(fixture, clock: clock)
        await Self.probeThreeTimes(running, clock: clock)
        let (command, _) = try Self.publisher(fixture, clock: clock)   // the announce process
        let spki = try Publisher.spkiSHA256(ofKeyPEM: try P256PrivateKey().publicKey.pemRepresentation)
        try await command.announce(partnerID: "api", spkiSHA256: spki)

        await running.probe()   // saves the running service's state
        #expect(await running.cycle())
        let checked = try ListAcceptance.checkPublishable(try Data(contentsOf: fixture.listURL), keys: [try fixture.key.publicKey], threshold: 1,
                                                          previousVersion: nil, previousTimestamp: nil, at: clock.now())
        #expect(checked.entries.contains { $0.kind == .publicKey && $0.fingerprint.base64EncodedString() == spki })
        let (restarted, _) = try Self.publisher(fixture, clock: clock)
        #expect(await restarted.state.announcements.map(\.spkiSHA256) == [spki])
    }

    @Test func anApprovedFirstCertificateIsPublished() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let json = String(decoding: fixture.json(), as: UTF8.self).replacingOccurrences(of: #", "allowedCAs": ["\#(fixture.pki.intermediate.spkiSHA256Base64)"]"#, with: "")
        let file = try PublicationFile(json: Data(json.utf8), baseDirectory: fixture.folder)
        let (publisher, _) = try Self.publisher(fixture, clock: clock, file: file)
        await publisher.probe()
        await publisher.cycle()
        let change = try #require(await publisher.pending().first)
        #expect(change.outcome == .firstCertificate)
        let stranger = try KeyFileSigner(privateKey: try P256PrivateKey())
        await #expect(throws: PublisherError.self) { try await publisher.approve(changeID: change.id, signer: stranger) }
        try await publisher.approve(changeID: change.id, signer: try KeyFileSigner(privateKey: fixture.key))
        #expect(FileManager.default.fileExists(atPath: fixture.listURL.path))
    }
}

@Suite struct OutputFolderTests {
    @Test func anUnwritableOutputFolderLeavesTheLastGoodList() async throws {
        let fixture = try PublisherFixture(pki: try TestPKI(hosts: ["localhost"]))
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        await publisher.cycle()
        let good = try Data(contentsOf: fixture.listURL)
        let folder = fixture.listURL.deletingLastPathComponent().path
        let unwritable = try UnwritableFolder(folder)
        defer { unwritable.restore() }
        clock.advance(86_400)
        await publisher.probe()
        #expect(await publisher.cycle() == false)
        #expect(try Data(contentsOf: fixture.listURL) == good)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(names == ["list.json"])
    }
}
