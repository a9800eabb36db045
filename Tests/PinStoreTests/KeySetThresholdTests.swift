import Foundation
import Testing
@testable import PinStore
import PinStoreSigning

/// A key set with a threshold: a list counts only when k distinct trusted keys signed it.
@Suite struct KeySetThresholdTests {
    /// A 2-of-3 store (keys 0, 1, 2) without key documents, holding a list signed by keys 0 and 1.
    static func storeWithList(_ ring: KeyRing, _ publication: Publication, directory: URL) async throws -> PinStore {
        publication.list = try Rotation.list(ring, signers: [0, 1])
        let store = try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory,
                                                                        keyDocuments: false),
                                 fetcher: publication.fetcher(), clock: ManualClock.inValidPeriod())
        try #require(await store.update() == .ok)
        return store
    }

    @Test func aListSignedByTwoOfThreeKeysIsAccepted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let store = try await Self.storeWithList(try KeyRing(count: 3), Publication(), directory: directory.url)
        #expect(store.storedEntries == [Rotation.pinned])
        #expect(store.matchPins(commonName: Rotation.host, fingerprint: Rotation.pinned.fingerprint) == .trusted)
    }

    @Test func anyTwoKeysOfTheSetMaySign() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.list = try Rotation.list(ring, signers: [2, 0], entries: [Rotation.other], timestamp: Rotation.now + 1)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries == [Rotation.other])
    }

    @Test func oneKeyAloneCannotPublishAListAndTheStoredPinsStay() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.list = try Rotation.list(ring, signers: [1], entries: [Rotation.other], timestamp: Rotation.now + 1)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .invalidSignature)
        #expect(report.error?.code == .invalidListSignature)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func theSameKeySigningTwiceCountsOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.list = try Rotation.list(ring, signers: [1, 1], entries: [Rotation.other], timestamp: Rotation.now + 1)
        #expect(await store.update(mode: .forced) == .invalidSignature)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func aKeyOutsideTheSetDoesNotCount() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 4)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.list = try Rotation.list(ring, signers: [0, 3], entries: [Rotation.other], timestamp: Rotation.now + 1)
        #expect(await store.update(mode: .forced) == .invalidSignature)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func aListWithOnlyPerEntrySignaturesIsRefusedAboveThresholdOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        publication.list = try FingerprintListSigner(privateKey: ring[0]).staticList([Rotation.other])
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .invalidListSignature)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func aSingleKeyStoreReadsTheFirstSignatureOfAMultiSignedList() throws {
        let ring = try KeyRing(count: 2)
        let body = try Rotation.list(ring, signers: [0, 1])
        // What a PinStore that knows only key 0 (and the deployed clients' per-entry check) does.
        #expect(try FingerprintList.verifiedEntries(staticList: body, publicKey: ring[0].publicKey) == [Rotation.pinned])
        #expect(String(decoding: body, as: UTF8.self).contains("\"listSignatures\": [{\"keyid\": "))
    }

    @Test func theListSignaturesMemberMustFollowTheFirstSignature() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let publication = Publication()
        let store = try await Self.storeWithList(ring, publication, directory: directory.url)
        // Lines: `{`, listSignature, listSignatures, timestamp, fingerprints... Moving the
        // labelled signatures after the timestamp puts them where the format does not look.
        let lines = String(decoding: try Rotation.list(ring, signers: [0, 1], entries: [Rotation.other], timestamp: Rotation.now + 1),
                           as: UTF8.self).components(separatedBy: "\n")
        try #require(lines[2].contains("listSignatures") && lines[3].contains("timestamp"))
        publication.list = Data(([lines[0], lines[1], lines[3], lines[2]] + lines[4...]).joined(separator: "\n").utf8)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .invalidListData)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func challengeModeCountsTheLabelledHeaderSignatures() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let body = try FingerprintListSigner.challengeModeBody([Rotation.pinned], timestamp: Rotation.now)
        let fetcher = ScriptedFetcher { request throws(PinStoreError) in
            let challenge = request.headers[PinStore.challengeHeader] ?? ""
            let signer = FingerprintListSigner(privateKey: ring[2], additionalKeys: [ring[0]])
            return FingerprintListResponse(statusCode: 200, headers: [
                PinStore.signatureHeader: try signer.challengeResponseSignature(challenge: challenge, body: body),
                FingerprintListSigner.extraSignaturesHeader: try signer.challengeResponseExtraSignatures(challenge: challenge, body: body) ?? "",
            ], body: body)
        }
        let store = try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory.url,
                                                                        keyDocuments: false, useChallenge: true),
                                 fetcher: fetcher, clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .ok)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func challengeModeRefusesOneSignatureAboveThresholdOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 3)
        let body = try FingerprintListSigner.challengeModeBody([Rotation.pinned], timestamp: Rotation.now)
        let fetcher = ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: ring[1]))
        let store = try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1, 2], threshold: 2, directory: directory.url,
                                                                        keyDocuments: false, useChallenge: true),
                                 fetcher: fetcher, clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .invalidSignature)
        #expect(store.storedEntries.isEmpty)
    }

    @Test func aThresholdAboveTheKeyCountIsAConfigurationError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        #expect(throws: PinStoreError(.invalidConfiguration, "")) {
            try PinStore(configuration: Rotation.configuration(ring, keys: [0, 1], threshold: 3, directory: directory.url),
                         fetcher: Publication().fetcher(), clock: ManualClock.inValidPeriod())
        }
    }

    @Test func theSameKeyConfiguredTwiceIsAConfigurationError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        #expect(throws: PinStoreError(.invalidConfiguration, "")) {
            try PinStore(configuration: Rotation.configuration(ring, keys: [0, 0], threshold: 2, directory: directory.url),
                         fetcher: Publication().fetcher(), clock: ManualClock.inValidPeriod())
        }
    }
}
