import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
import PinStoreTestSupport
@testable import PinStorePublisher

/// Issue 45, item 4: announcements that end, an announcement that says when it was not
/// published, and a status that alarms only when the list is not re-signed in time. Real state,
/// list and output files; the clock is moved by hand.
@Suite struct PublisherAnnouncementTests {
    /// Whether the list in the output folder pins `spki` as a key.
    static func listPinsKey(_ fixture: PublisherFixture, _ spki: String, at now: Date) throws -> Bool {
        let checked = try ListAcceptance.checkPublishable(try Data(contentsOf: fixture.listURL), keys: [try fixture.key.publicKey], threshold: 1,
                                                          previousVersion: nil, previousTimestamp: nil, at: now)
        return checked.entries.contains { $0.kind == .publicKey && $0.fingerprint.base64EncodedString() == spki }
    }

    @Test func anAnnouncedKeyDeployedSeenAndRetiredIsWithdrawnAfterTheGracePeriod() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock.wholeSeconds()
        let (publisher, prober) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        let next = try pki.issueLeaf(for: ["localhost"])
        let third = try pki.issueLeaf(for: ["localhost"])
        let undeployed = try Publisher.spkiSHA256(ofKeyPEM: try P256PrivateKey().publicKey.pemRepresentation)
        let nextKey = next.certificate.spkiSHA256Base64
        try await publisher.announce(partnerID: "api", spkiSHA256: nextKey)
        try await publisher.announce(partnerID: "api", spkiSHA256: undeployed)
        #expect(await publisher.cycle())
        #expect(try Self.listPinsKey(fixture, nextKey, at: clock.now()))

        // Deployed and seen.
        prober.present(["127.0.0.1:443": next.chainDER])
        clock.advance(600)
        await publisher.probe()
        #expect(await publisher.cycle())
        #expect(await publisher.state.announcements.first { $0.spkiSHA256 == nextKey }?.firstPresented == clock.now())
        // Retired: the next rotation replaces it.
        prober.present(["127.0.0.1:443": third.chainDER])
        clock.advance(600)
        await publisher.probe()
        #expect(await publisher.cycle())
        // Within the grace period the retired key stays pinned (a client still on an old
        // connection is not cut off)...
        clock.advance(86_400)
        await publisher.probe()
        #expect(await publisher.cycle())
        #expect(try Self.listPinsKey(fixture, nextKey, at: clock.now()))
        // ...and a grace period (14 days here) after it was last presented it is withdrawn, not
        // 90 days after it was announced. The key never deployed stays pinned.
        clock.advance(13 * 86_400)
        await publisher.probe()
        #expect(await publisher.cycle())
        #expect(!(try Self.listPinsKey(fixture, nextKey, at: clock.now())))
        #expect(try Self.listPinsKey(fixture, undeployed, at: clock.now()))
        let ended = await publisher.state.announcements.first { $0.spkiSHA256 == nextKey }
        #expect(ended?.ended == clock.now())
        // Ended, it is not taken back from the state file by the running service's own saves.
        await publisher.probe()
        let (restarted, _) = try PublisherTests.publisher(fixture, clock: clock)
        #expect(await restarted.state.announcements.first { $0.spkiSHA256 == nextKey }?.ended != nil)
    }

    /// The library's side of `announce && deploy`: a read-only output folder leaves the
    /// announcement recorded and the list in force without the key, and says so.
    @Test func anAnnouncementTheOutputFolderCannotTakeIsRecordedButNotCarried() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())
        let key = try Publisher.spkiSHA256(ofKeyPEM: try P256PrivateKey().publicKey.pemRepresentation)
        let unwritable = try UnwritableFolder(fixture.listURL.deletingLastPathComponent().path)
        do {
            defer { unwritable.restore() }
            try await publisher.announce(partnerID: "api", spkiSHA256: key)
            #expect(await publisher.cycle() == false)
            #expect(await publisher.listCarries(partnerID: "api", spkiSHA256: key) == false)
            #expect(try StateFile(url: fixture.stateURL).load().announcements.map(\.spkiSHA256) == [key])
        }
        #expect(await publisher.cycle())
        #expect(await publisher.listCarries(partnerID: "api", spkiSHA256: key))
        #expect(try Self.listPinsKey(fixture, key, at: clock.now()))
    }
}

@Suite struct PublisherStatusTests {
    /// A list that lives 12 hours and is re-signed every hour, as the article recommends for a
    /// short `expires`: never overdue while it is re-signed, overdue once a re-signing is late by
    /// more than two probe intervals.
    @Test func aShortLivedListIsOverdueOnlyWhenItsReSigningIsLate() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock.wholeSeconds()
        let file = try fixture.file(#", "expires": "12h", "resignInterval": "1h""#)
        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock, file: file)
        #expect(await publisher.status().isListOverdue(at: clock.now()))   // no list yet
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())
        let published = clock.now()
        var status = await publisher.status()
        #expect(status.listResignDue == published + 3_600)
        #expect(status.resignSlack == 1_200)   // two probe intervals of 10 minutes
        // Expiring within a day, but re-signed on schedule: not overdue (exit 4 before).
        #expect(!status.isListOverdue(at: clock.now()))
        #expect(!status.isListOverdue(at: published + 3_600 + 1_200))
        // No cycle for longer: overdue while the list is still valid.
        clock.advance(3_600 + 1_201)
        status = await publisher.status()
        #expect(status.isListOverdue(at: clock.now()))
        // A cycle re-signs it.
        await publisher.probe()
        #expect(await publisher.cycle())
        #expect(!(await publisher.status().isListOverdue(at: clock.now())))
    }
}
