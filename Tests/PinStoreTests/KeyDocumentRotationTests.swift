import Foundation
import Testing
@testable import PinStore
import PinStoreSigning

/// Key documents: the list-signing keys rotate without a release, by The Update Framework's
/// rules for root metadata (each step signed by a threshold of the old keys and of the new,
/// none skipped, no rollback, at most 32 per update, only the final document's expiry).
@Suite struct KeyDocumentRotationTests {
    /// Version 1 (the configuration): keys 0, 1, 2, threshold 2.
    /// Version 2: keys 1, 2, 3, threshold 2 (key 0 retired), signed by 0 and 1 (old) and 2 and 3 (new).
    /// Version 3: keys 2, 3, 4, threshold 2, signed by 1 and 2 (old) and 3 and 4 (new).
    static func v2(_ ring: KeyRing, expires: Int64 = Rotation.later) throws -> KeyDocument.EnvelopeWire {
        try Rotation.document(ring, version: 2, keys: [1, 2, 3], threshold: 2, signers: [0, 1, 2, 3], expires: expires)
    }

    static func v3(_ ring: KeyRing, expires: Int64 = Rotation.later) throws -> KeyDocument.EnvelopeWire {
        try Rotation.document(ring, version: 3, keys: [2, 3, 4], threshold: 2, signers: [1, 2, 3, 4], expires: expires)
    }

    static func makeStore(_ ring: KeyRing, _ publication: Publication, directory: URL,
                          clock: ManualClock = .inValidPeriod()) throws -> PinStore {
        try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory),
                     fetcher: publication.fetcher(), clock: clock)
    }

    /// A store at key set 1 holding a list signed by keys 0 and 1.
    static func storeWithList(_ ring: KeyRing, _ publication: Publication, directory: URL,
                              clock: ManualClock = .inValidPeriod()) async throws -> PinStore {
        publication.list = try Rotation.list(ring, signers: [0, 1], version: 1)
        let store = try makeStore(ring, publication, directory: directory, clock: clock)
        try #require(await store.update() == .ok)
        try #require(store.keySetVersion == 1)
        return store
    }

    /// Refused with `code`, the stored pins and keys untouched.
    static func expectRefused(_ store: PinStore, _ code: PinStoreError.Code, keyVersion: Int64,
                              sourceLocation: SourceLocation = #_sourceLocation) async {
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == code, "\(String(describing: report.error))", sourceLocation: sourceLocation)
        #expect(store.storedEntries == [Rotation.pinned], sourceLocation: sourceLocation)
        #expect(store.keySetVersion == keyVersion, sourceLocation: sourceLocation)
    }

    @Test func aStoreConfiguredWithSetOneReachesSetThreeAcrossARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let first = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring)])
        publication.list = try Rotation.list(ring, signers: [1, 3], version: 2)
        #expect(await first.update(mode: .forced) == .ok)
        #expect(first.keySetVersion == 2)
        // Restart: the accepted document and the list signed with its keys load from the files.
        let second = try Self.makeStore(ring, publication, directory: directory.url)
        #expect(second.keySetVersion == 2)
        #expect(second.storedEntries == [Rotation.pinned])
        publication.keys = try Rotation.served([Self.v2(ring), Self.v3(ring)])
        publication.list = try Rotation.list(ring, signers: [3, 4], entries: [Rotation.other], version: 3)
        #expect(await second.update(mode: .forced) == .ok)
        #expect(second.keySetVersion == 3)
        #expect(second.storedEntries == [Rotation.other])
    }

    @Test func oneUpdateFollowsSeveralVersionsInOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v3(ring), Self.v2(ring)])  // order on the wire does not matter
        publication.list = try Rotation.list(ring, signers: [2, 4], version: 2)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.keySetVersion == 3)
    }

    @Test func aKeyRetiredInVersionTwoCannotSignAfterwards() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring)])
        // Keys 0 (retired) and 1: only one of them is in set 2.
        publication.list = try Rotation.list(ring, signers: [0, 1], entries: [Rotation.other], version: 2)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .invalidListSignature)
        #expect(store.keySetVersion == 2)
        // The list in force (keys 0 and 1) does not meet set 2's threshold either: it stops
        // counting with the rotation (RetiredKeyListTests), and the host is unpinned, not open.
        #expect(store.storedEntries.isEmpty)
    }

    @Test func oneOldKeyAloneCannotPublishAKeyDocument() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        // Whoever holds key 0 alone names a set of its own choosing.
        publication.keys = try Rotation.served([Rotation.document(ring, version: 2, keys: [0, 3], threshold: 1, signers: [0, 3])])
        await Self.expectRefused(store, .keyDocumentThresholdNotMet, keyVersion: 1)
    }

    @Test func theNewKeysMustSignTheirDocumentToo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Rotation.document(ring, version: 2, keys: [1, 2, 3], threshold: 2, signers: [0, 1])])
        await Self.expectRefused(store, .keyDocumentThresholdNotMet, keyVersion: 1)
    }

    @Test func anOlderKeyDocumentIsARollback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring), Self.v3(ring)])
        publication.list = try Rotation.list(ring, signers: [3, 4], version: 2)
        try #require(await store.update(mode: .forced) == .ok)
        publication.keys = try Rotation.served([Self.v2(ring)])
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .rollback)
        #expect(store.keySetVersion == 3)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func theSameKeyDocumentAgainChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring)])
        publication.list = try Rotation.list(ring, signers: [1, 2], version: 2)
        try #require(await store.update(mode: .forced) == .ok)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.keySetVersion == 2)
    }

    @Test func aSkippedVersionIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v3(ring)])
        await Self.expectRefused(store, .invalidKeyDocument, keyVersion: 1)
    }

    @Test func anExpiredIntermediateDocumentIsFollowed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring, expires: Rotation.now - 86_400), Self.v3(ring)])
        publication.list = try Rotation.list(ring, signers: [2, 3], version: 2)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.keySetVersion == 3)
    }

    @Test func anExpiredFinalDocumentRefusesTheUpdate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        // Signed by keys 1 and 2, in both sets: the list in force stays across the rotation
        // (a list set 2 did not sign would stop counting, expired document or not).
        publication.list = try Rotation.list(ring, signers: [1, 2], version: 1)
        let store = try Self.makeStore(ring, publication, directory: directory.url)
        try #require(await store.update() == .ok)
        publication.keys = try Rotation.served([Self.v2(ring, expires: Rotation.now - 1)])
        publication.list = try Rotation.list(ring, signers: [1, 2], entries: [Rotation.other], version: 2)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .expired)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func moreThanThirtyTwoVersionsInOneUpdateAreRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        // Versions 2...34, each the same 2-of-3 set signed by keys 0 and 1.
        publication.keys = try Rotation.served((2...34).map { version in
            try Rotation.document(ring, version: Int64(version), keys: [0, 1, 2], threshold: 2, signers: [0, 1])
        })
        await Self.expectRefused(store, .invalidKeyDocument, keyVersion: 1)
    }

    @Test func thirtyTwoVersionsInOneUpdateAreFollowed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served((2...33).map { version in
            try Rotation.document(ring, version: Int64(version), keys: [0, 1, 2], threshold: 2, signers: [0, 1])
        })
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.keySetVersion == 33)
    }

    @Test func anOversizedKeyDocumentIsRefusedUnread() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = Data(("{\"keyDocuments\": []" + String(repeating: " ", count: KeyChain.maximumSize) + "}").utf8)
        await Self.expectRefused(store, .invalidKeyDocument, keyVersion: 1)
    }

    @Test func aMalformedKeyDocumentIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = Data("{\"keyDocuments\": [{\"signed\": \"not base64!\", \"signatures\": []}]}".utf8)
        await Self.expectRefused(store, .invalidKeyDocument, keyVersion: 1)
    }

    @Test func aTamperedKeyDocumentFileIsRefusedOnLoad() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring)])
        publication.list = try Rotation.list(ring, signers: [1, 2], version: 2)
        try #require(await store.update(mode: .forced) == .ok)
        // Someone with write access to the folder lowers version 2's threshold to 1.
        let file = store.configuration.keyDocumentFileURL
        var stored = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as! [String: [[String: Any]]]
        let payload = try #require(Data(base64Encoded: stored["keyDocuments"]![0]["signed"] as! String))
        let edited = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "\"threshold\": 2", with: "\"threshold\": 1")
        stored["keyDocuments"]![0]["signed"] = Data(edited.utf8).base64EncodedString()
        try JSONSerialization.data(withJSONObject: stored).write(to: file)
        let restarted = try Self.makeStore(ring, publication, directory: directory.url)
        #expect(restarted.keySetVersion == 1)
    }

    @Test func withoutAKeyDocumentURLTheSavedKeyDocumentsAreNotRead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.keys = try Rotation.served([Self.v2(ring)])
        publication.list = try Rotation.list(ring, signers: [1, 2], version: 2)
        try #require(await store.update(mode: .forced) == .ok)
        let withoutURL = try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory.url,
                                                                             keyDocuments: false),
                                      fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        #expect(withoutURL.keySetVersion == 1)
    }

    @Test func withoutAKeyDocumentURLNothingButTheListIsRequested() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let publication = Publication()
        publication.list = try FingerprintListSigner(privateKey: ring[0]).staticList([Rotation.pinned])
        let fetcher = publication.fetcher()
        let store = try PinStore(configuration: Rotation.configuration(ring, keys: [0], threshold: 1, directory: directory.url,
                                                                        keyDocuments: false),
                                 fetcher: fetcher, clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 1)
        #expect(fetcher.lastRequest?.url == Rotation.listURL)
        #expect(!FileManager.default.fileExists(atPath: store.configuration.keyDocumentFileURL.path))
    }
}

/// Workers sharing one storage directory: one follows the key documents, the others take its
/// keys with its list.
@Suite struct SharedDirectoryKeyRotationTests {
    @Test func aDueStoreAdoptsTheKeysAndListAnotherStoreAccepted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 5)
        let clock = ManualClock.inValidPeriod()
        let publication = Publication()
        publication.list = try Rotation.list(ring, signers: [0, 1], version: 1)
        let configuration = try Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory.url)
        let a = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: clock)
        let quiet = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "not reachable in this test") }
        let b = try PinStore(configuration: configuration, fetcher: quiet, clock: clock)
        try #require(await a.update() == .ok)
        clock.advance(600)
        publication.keys = try Rotation.served([KeyDocumentRotationTests.v2(ring)])
        publication.list = try Rotation.list(ring, signers: [2, 3], entries: [Rotation.other], version: 2)
        try #require(await a.update(mode: .forced) == .ok)
        // B never reached the servers (its update is due since start-up): its scheduled update
        // takes A's saved list, verified with the key documents A saved.
        #expect(b.nextUpdateDate <= clock.now())
        _ = await b.updater.scheduledUpdate()
        #expect(b.keySetVersion == 2)
        #expect(b.storedEntries == [Rotation.other])
        #expect(quiet.requestCount == 0)
    }
}

/// After a rotation, a list the new key set did not sign stops counting at once: a list a
/// retired (leaked) key signed, fast-forwarded to a huge version, neither stays in force nor
/// blocks the team's next list (TUF's fast-forward recovery).
@Suite struct RetiredKeyListTests {
    @Test func aFastForwardedListSignedByARetiredKeyIsReplacedByTheNewKeysList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        let publication = Publication()
        let configuration = try Rotation.configuration(ring, keys: [0], threshold: 1, directory: directory.url)
        let store = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], version: 42)
        #expect(await store.update(mode: .forced) == .ok)
        // Key 0 leaks: whoever answers the list request serves its own pins, version and timestamp near the maximum.
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: Int64.max - 1, timestamp: Int64.max - 1)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries == [Rotation.other])
        // The team retires key 0 (version 2: key 1 only, signed by old and new) and publishes a list signed by key 1.
        publication.keys = try Rotation.served([Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [0, 1])])
        publication.list = try Rotation.list(ring, signers: [1], version: 43)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .ok, "\(String(describing: report.error))")
        #expect(store.keySetVersion == 2)
        #expect(!store.storedEntries.contains(Rotation.other))
        #expect(!store.storedEntries.isEmpty)
    }

    @Test func aListTheRetiredKeyAloneSignedStopsCountingEvenWhenNoNewListArrives() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        let publication = Publication()
        let configuration = try Rotation.configuration(ring, keys: [0], threshold: 1, directory: directory.url)
        let store = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: 42)
        #expect(await store.update(mode: .forced) == .ok)
        // The rotation is published; the list server still serves the old list (signed by key 0 only).
        publication.keys = try Rotation.served([Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [0, 1])])
        _ = await store.updateWithReport(mode: .forced)
        #expect(store.keySetVersion == 2)
        #expect(store.storedEntries.isEmpty)
    }

    @Test func aListSignedByBothKeySetsStaysInForceAcrossTheRotation() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // Key 1 is in both sets and signs first (the entries' own signatures are the first key's).
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let configuration = try Rotation.configuration(ring, keys: [0, 1], threshold: 1, directory: directory.url)
        let store = try PinStore(configuration: configuration, fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        publication.list = try Rotation.list(ring, signers: [1], version: 42)
        #expect(await store.update(mode: .forced) == .ok)
        let before = store.storedEntries
        let generation = store.listGeneration
        publication.keys = try Rotation.served([Rotation.document(ring, version: 2, keys: [1, 2], threshold: 1, signers: [0, 2])])
        let report = await store.updateWithReport(mode: .forced)   // the same list again: version 42, a no-op
        #expect(report.result == .ok)
        #expect(store.keySetVersion == 2)
        #expect(store.storedEntries == before)
        #expect(store.listGeneration == generation)   // never dropped, not even for a moment
    }
}

/// Labelled signatures cost at most one verification per key, however many copies a list or
/// header repeats.
@Suite struct LabelledSignatureCostTests {
    /// Only the first signature labelled with a key is checked: a valid one behind a junk copy
    /// does not count, which is what bounds the work to one verification per key.
    @Test func onlyTheFirstSignatureLabelledWithAKeyIsChecked() throws {
        let ring = try KeyRing(count: 3)
        let keys = try ListKeySet(version: 1, keys: ring.publicKeys([0, 1, 2]), threshold: 1, expires: nil)
        let message = Data("list".utf8)
        let valid = try ring[0].signature(for: message).base64EncodedString()
        let junk = Data(repeating: 0x41, count: 64).base64EncodedString()
        #expect(keys.signers(labelled: [(keys.keyIDs[0], valid)], labelledMessage: message, unlabelled: nil, unlabelledMessage: Data()) == [0])
        #expect(keys.signers(labelled: [(keys.keyIDs[0], junk), (keys.keyIDs[0], valid)], labelledMessage: message,
                             unlabelled: nil, unlabelledMessage: Data()).isEmpty)
    }

    @Test func aValidSignatureAfterTheCapIsNotCounted() throws {
        let ring = try KeyRing(count: 3)
        let keys = try ListKeySet(version: 1, keys: ring.publicKeys([0, 1, 2]), threshold: 1, expires: nil)
        let message = Data("list".utf8)
        let valid = try ring[1].signature(for: message).base64EncodedString()
        let filler = Array(repeating: (keyID: "00", signature: "AA=="), count: ListKeySet.maximumLabelledSignatures)
        #expect(keys.signers(labelled: [(keys.keyIDs[1], valid)], labelledMessage: message, unlabelled: nil, unlabelledMessage: Data()) == [1])
        #expect(keys.signers(labelled: filler + [(keys.keyIDs[1], valid)], labelledMessage: message, unlabelled: nil, unlabelledMessage: Data()).isEmpty)
    }
}
