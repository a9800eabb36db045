import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// Key pins carried by a signed list (`"pin": "spki"` / `"ca-spki"`), honoured only where a
/// signature covers that member.
@Suite struct ListKeyPinTests {
    static let farFuture = SignedLists.farFuture
    static let timestamp: Int64 = 1_893_000_000

    static func keyEntry(_ certificate: String, kind: FingerprintEntry.Kind = .publicKey, depth: Int = 0) throws -> FingerprintEntry {
        let certificate = try TestResources.certificate("pki/\(certificate).pem")
        return FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(certificate.subjectPublicKeyInfo),
                                expires: farFuture, depth: depth, kind: kind)
    }

    /// A store updated from `body`; the update result.
    static func store(serving body: Data) async throws -> (PinStore, PinStore.UpdateResult) {
        let directory = try TemporaryDirectory()
        let store = try StoreFixtures.store(ScriptedFetcher.serving(body), directory: directory.url)
        return (store, await store.update(mode: .forced))
    }

    static func signer() throws -> FingerprintListSigner { FingerprintListSigner(privateKey: try StoreFixtures.signingKey()) }

    @Test func aWholeListSignedLeafKeyPinAcceptsARenewalWithTheSameKey() async throws {
        let body = try Self.signer().staticList([Self.keyEntry("localhost")], timestamp: Self.timestamp)
        let (store, result) = try await Self.store(serving: body)
        #expect(result == .ok)
        #expect(try PinPolicyTests.decide(store, "localhost-renewed-chain").isAllowed)
        #expect(try PinPolicyTests.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
        let spki = try TestResources.certificate("pki/localhost.pem").subjectPublicKeyInfo
        #expect(store.matchPins(commonName: "localhost", publicKeySHA256: SHA256Digest.hash(spki)) == .trusted)
        // A certificate shows its key, as the leaf view's does; a lone fingerprint cannot prove a key pin.
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        #expect(store.matchPins(commonName: "localhost", fingerprint: SHA256Digest.hash(try StoreFixtures.der("localhost"))) == .untrusted)
    }

    @Test func aWholeListSignedCAKeyPinRefusesALeafUnderAnotherCA() async throws {
        let body = try Self.signer().staticList([Self.keyEntry("intermediate-ca", kind: .caPublicKey)], timestamp: Self.timestamp)
        let (store, result) = try await Self.store(serving: body)
        #expect(result == .ok)
        #expect(try PinPolicyTests.decide(store, "localhost-chain").isAllowed)
        #expect(try PinPolicyTests.decide(store, "localhost-other-ca-chain").failure?.reason == .pinMismatch)
    }

    @Test func aKeyPinMarkerThatNoSignatureCoversIsDroppedNeverWidened() async throws {
        // The per-entry signature covers name&fingerprint&expires only. Here the server signed a
        // certificate pin on the intermediate's *key digest*, and someone added "pin": "ca-spki".
        // Read as a certificate pin it matches nothing; read as the unsigned member says, it
        // would admit every leaf under that CA. It must be dropped.
        let entry = try Self.keyEntry("intermediate-ca", kind: .certificate)
        let signed = try TestLists.signedStatic([entry], key: StoreFixtures.signingKey())
        let tampered = Data(String(decoding: signed, as: UTF8.self)
            .replacingOccurrences(of: "\"name\":", with: "\"pin\":\"ca-spki\",\"name\":").utf8)
        #expect(tampered != signed)
        let (store, result) = try await Self.store(serving: tampered)
        // The entry signatures verify (the unsigned member is the only change); the entry is
        // dropped, which leaves the list with nothing valid.
        #expect(result == .storeIsEmpty)
        #expect(try PinPolicyTests.decide(store, "localhost-chain").failure?.reason == .noPinsForHost(updateResult: nil))
        #expect(store.storedEntries.isEmpty)
    }

    @Test func changingThePinMemberOfAWholeListSignedListBreaksItsSignature() async throws {
        let body = try Self.signer().staticList([Self.keyEntry("localhost")], timestamp: Self.timestamp)
        let tampered = Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\"pin\": \"spki\"", with: "\"pin\": \"ca-spki\"").utf8)
        #expect(tampered != body)
        let (_, result) = try await Self.store(serving: tampered)
        #expect(result == .invalidSignature)
    }

    @Test func theSignerRefusesKeyPinsWithoutAWholeListSignature() throws {
        #expect(throws: PinStoreError.self) { try Self.signer().staticList([Self.keyEntry("localhost")]) }
    }

    @Test func listsWithoutThePinMemberKeepTheirMeaning() throws {
        let document = try FingerprintListDocument(body: StoreFixtures.list("static-good.json"))
        #expect(document.entries.allSatisfy { $0.entry.kind == .certificate })
        #expect(throws: PinStoreError.self) {
            try FingerprintListDocument(body: Data(#"{"fingerprints":[{"name":"a.example","fingerprint":"\#(PinPolicyTests.backup)","expires":1,"pin":"key"}]}"#.utf8))
        }
    }
}
