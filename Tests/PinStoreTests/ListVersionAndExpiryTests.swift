import Foundation
import Logging
import MetricsTestKit
import Testing
@testable import PinStore
import PinStoreSigning

/// The whole list's `version` (monotonic) and `expires` (a list past it is no longer fresh):
/// what defeats rollback and freeze attacks on the signed list.
@Suite struct ListVersionAndExpiryTests {
    static let expires = Rotation.now + 86_400

    /// A one-key store (key 0) holding list version 5, expiring a day after "now".
    static func storeWithList(_ ring: KeyRing, _ publication: Publication, directory: URL, clock: ManualClock,
                              policy: PinStore.ExpiredListPolicy = .refusePins, logger: Logger? = nil,
                              metrics: TestMetrics? = nil) async throws -> PinStore {
        publication.list = try Rotation.list(ring, signers: [0], version: 5, expires: Self.expires)
        var configuration = try Rotation.configuration(ring, keys: [0], threshold: 1, directory: directory, keyDocuments: false)
        configuration.expiredListPolicy = policy
        let store = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: clock, logger: logger,
                                 metricsFactory: metrics)
        try #require(await store.update() == .ok)
        return store
    }

    @Test func aLowerListVersionIsARollback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: .inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: 4, expires: Self.expires,
                                             timestamp: Rotation.now + 10)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .rollback)
        #expect(store.storedEntries.map(\.fingerprint) == [Rotation.pinned.fingerprint])
    }

    @Test func theSameListVersionIsANoOp() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: .inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: 5, expires: Self.expires)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries.map(\.fingerprint) == [Rotation.pinned.fingerprint])
    }

    @Test func aHigherListVersionReplacesTheList() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: .inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: 6, expires: Self.expires)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries.map(\.fingerprint) == [Rotation.other.fingerprint])
    }

    @Test func aListWithoutVersionAfterAVersionedOneIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: .inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], timestamp: Rotation.now + 10)
        #expect(await store.updateWithReport(mode: .forced).error?.code == .rollback)
        #expect(store.storedEntries.map(\.fingerprint) == [Rotation.pinned.fingerprint])
    }

    @Test func aDownloadedListPastItsExpiryIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: .inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: 6, expires: Rotation.now)
        #expect(await store.updateWithReport(mode: .forced).error?.code == .expired)
        #expect(store.storedEntries.map(\.fingerprint) == [Rotation.pinned.fingerprint])
    }

    @Test func aReplayedExpiredListDoesNotKeepItsPinsUnderTheDefaultPolicy() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let clock = ManualClock.inValidPeriod()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: clock)
        // The list server keeps answering with the same validly signed list, now past its expiry.
        clock.set(Date(timeIntervalSince1970: TimeInterval(Self.expires)))
        #expect(store.matchPins(commonName: Rotation.host, fingerprint: Rotation.pinned.fingerprint) == .empty)
        #expect(await store.updateWithReport(mode: .forced).error?.code == .expired)
        #expect(store.matchPins(commonName: Rotation.host, fingerprint: Rotation.pinned.fingerprint) == .empty)
    }

    @Test func theKeepPinsPolicyKeepsAnExpiredListsPins() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        let clock = ManualClock.inValidPeriod()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url, clock: clock, policy: .keepPins)
        clock.set(Date(timeIntervalSince1970: TimeInterval(Self.expires)))
        #expect(store.matchPins(commonName: Rotation.host, fingerprint: Rotation.pinned.fingerprint) == .trusted)
    }

    @Test func underTheDefaultPolicyNoPinOutlivesItsList() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let store = try await Self.storeWithList(ring, Publication(), directory: directory.url, clock: .inValidPeriod())
        #expect(store.storedEntries.map(\.expires) == [Self.expires])
    }

    @Test func anUpdateIsDueNoLaterThanTheListsExpiry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let store = try await Self.storeWithList(ring, Publication(), directory: directory.url, clock: .inValidPeriod())
        #expect(store.nextUpdateDate <= Date(timeIntervalSince1970: TimeInterval(Self.expires)))
    }

    @Test func anExpiredListIsReportedByGaugeAndOneLogLine() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let clock = ManualClock.inValidPeriod()
        let (logger, records) = RecordingLogHandler.logger()
        let metrics = TestMetrics()
        let store = try await Self.storeWithList(ring, Publication(), directory: directory.url, clock: clock, logger: logger,
                                                 metrics: metrics)
        clock.set(Date(timeIntervalSince1970: TimeInterval(Self.expires + 10)))
        for _ in 0..<3 { _ = await store.update(mode: .forced) }
        #expect(try metrics.expectGauge("pinstore_list_expired", [("store", "rotation")]).lastValue == 1)
        #expect(records.all.filter { $0.message.contains("has expired") }.count == 1)
    }

    @Test func decisionsUnderAnExpiredListSaySo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let clock = ManualClock.inValidPeriod()
        let store = try await Self.storeWithList(ring, Publication(), directory: directory.url, clock: clock)
        let stream = store.decisions()
        let fresh = PinningDecision.deny(PinningFailure(host: Rotation.host, reason: .noPinsForHost(updateResult: nil)))
        store.record(fresh, host: Rotation.host)
        clock.set(Date(timeIntervalSince1970: TimeInterval(Self.expires)))
        store.record(fresh, host: Rotation.host)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.listExpired == false)
        let expired = await iterator.next()
        #expect(expired?.listExpired == true)
        #expect(expired?.description.hasSuffix("(the signed list in force has expired)") == true)
    }

    @Test func versionAndExpiryOutsideAWholeListSignatureAreIgnored() throws {
        let ring = try KeyRing(count: 1)
        // Per-entry signatures only: whoever answers the request could have written these members.
        let text = String(decoding: try FingerprintListSigner(privateKey: ring[0]).staticList([Rotation.pinned]), as: UTF8.self)
            .replacingOccurrences(of: "{\n", with: "{\n  \"version\": 99, \"expires\": 1,\n")
        let verifier = ListVerifier(keys: try ListKeySet(version: 1, keys: [ring[0].publicKey], threshold: 1, expires: nil),
                                    requireListSignature: false, mode: .static)
        let verified = try verifier.verify(PersistedList(mode: .static, body: Data(text.utf8), nextUpdate: 0))
        #expect(verified.version == nil)
        #expect(verified.expires == nil)
        #expect(verified.entries == [Rotation.pinned])
    }
}
