import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// One configured key and no key documents: the store reads and writes what it did before key
/// sets existed.
@Suite struct OneKeyCompatibilityTests {
    @Test func aStoreFileWrittenBeforeKeySetsLoadsUnchanged() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        // The layout the previous release wrote (sorted keys, the body in Base64), by hand.
        let body = try StoreFixtures.list("static-good.json").base64EncodedString()
        let file = #"{"body":"\#(body)","format":1,"mode":"static","nextUpdate":1893459600,"updatedAt":1893456000}"#
        let url = try StoreFixtures.configuration(directory: directory.url).storeFileURL
        try Data(file.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        let fetcher = ScriptedFetcher.serving(Data())
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 0)
        #expect(store.keySetVersion == 1)
    }

    @Test func aOneKeyStoreWritesNoMemberAnOlderReleaseWouldNotKnow() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory.url)
        #expect(await store.update() == .ok)
        let saved = try JSONSerialization.jsonObject(with: Data(contentsOf: store.configuration.storeFileURL)) as? [String: Any]
        #expect(Set(saved?.keys.map { $0 } ?? []) == ["body", "format", "mode", "nextUpdate", "updatedAt"])
        #expect(!FileManager.default.fileExists(atPath: store.configuration.keyDocumentFileURL.path))
    }

    @Test func anExpiredListLoadedAtStartUpIsDueAtOnceAndPinsNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        publication.list = try Rotation.list(ring, signers: [0], version: 1, expires: Rotation.now + 60)
        let configuration = try Rotation.configuration(ring, keys: [0], threshold: 1, directory: directory.url, keyDocuments: false)
        let first = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        try #require(await first.update() == .ok)
        let later = ManualClock(Date(timeIntervalSince1970: TimeInterval(Rotation.now + 120)))
        let restarted = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: later)
        #expect(restarted.nextUpdateDate <= later.now())
        #expect(restarted.matchPins(commonName: Rotation.host, fingerprint: Rotation.pinned.fingerprint) == .empty)
    }
}
