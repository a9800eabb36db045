import Foundation
import Testing
@testable import PinStore
import PinStoreSigning

/// Hostile or broken key documents and multi-signed lists: every one is refused with a typed
/// error (never a trap), and nothing in force changes.
@Suite struct KeyDocumentBadInputTests {
    static let ring = Result { try KeyRing(count: 3) }

    @Test func everyTruncationOfAServedKeyDocumentFileIsRefusedWithATypedError() throws {
        let ring = try Self.ring.get()
        let trusted = try ListKeySet(version: 1, keys: ring.publicKeys([0, 1]), threshold: 2, expires: nil)
        let served = try Rotation.served([Rotation.document(ring, version: 2, keys: [1, 2], threshold: 2, signers: [0, 1, 2])])
        for length in 0..<served.count {
            #expect(throws: PinStoreError.self) {
                try KeyChain.follow(from: trusted, documents: try KeyChain.documents(in: served.prefix(length)))
            }
        }
        #expect(try KeyChain.follow(from: trusted, documents: KeyChain.documents(in: served)).count == 1)
    }

    @Test func aChangedByteInAKeyDocumentsPayloadBreaksItsSignatures() throws {
        let ring = try Self.ring.get()
        let trusted = try ListKeySet(version: 1, keys: ring.publicKeys([0, 1]), threshold: 2, expires: nil)
        let wire = try Rotation.document(ring, version: 2, keys: [1, 2], threshold: 2, signers: [0, 1, 2])
        let payload = try #require(Data(base64Encoded: wire.signed))
        var refused = 0
        for index in payload.indices {
            var changed = payload
            changed[index] ^= 0x01
            let tampered = KeyDocument.EnvelopeWire(signed: changed.base64EncodedString(), signatures: wire.signatures)
            do {
                _ = try KeyChain.follow(from: trusted, documents: [try KeyDocument(wire: tampered)])
            } catch {
                refused += 1
            }
        }
        #expect(refused == payload.count)
    }

    @Test func theLastPossibleVersionIsRefusedSoTheNextOneAlwaysExists() throws {
        let ring = try Self.ring.get()
        let payload = KeyDocument.payload(version: .max, expires: Rotation.later, threshold: 1, keys: try ring.publicKeys([0]))
        #expect(throws: PinStoreError(.invalidKeyDocument, "")) {
            try KeyDocument.envelope(payload: payload, signers: [ring[0]])
        }
    }

    @Test func aThresholdOfZeroIsRefused() throws {
        let ring = try Self.ring.get()
        let payload = KeyDocument.payload(version: 2, expires: Rotation.later, threshold: 0, keys: try ring.publicKeys([0]))
        #expect(throws: PinStoreError(.invalidKeyDocument, "")) {
            try KeyDocument.envelope(payload: payload, signers: [ring[0]])
        }
    }

    @Test func everyTruncationOfATwoKeyListIsRefusedWithATypedError() throws {
        let ring = try Self.ring.get()
        let body = try Rotation.list(ring, signers: [0, 1], version: 1, expires: Rotation.later)
        let verifier = ListVerifier(keys: try ListKeySet(version: 1, keys: ring.publicKeys([0, 1, 2]), threshold: 2, expires: nil),
                                    requireListSignature: false, mode: .static)
        for length in stride(from: 0, to: body.count, by: 7) {
            #expect(throws: PinStoreError.self) {
                try verifier.verify(PersistedList(mode: .static, body: body.prefix(length), nextUpdate: 0))
            }
        }
        #expect(try verifier.verify(PersistedList(mode: .static, body: body, nextUpdate: 0)).version == 1)
    }

    @Test func aMalformedListSignaturesMemberIsInvalidListData() throws {
        let ring = try Self.ring.get()
        let text = String(decoding: try Rotation.list(ring, signers: [0, 1]), as: UTF8.self)
            .replacingOccurrences(of: "\"listSignatures\": [{", with: "\"listSignatures\": [7, {")
        let verifier = ListVerifier(keys: try ListKeySet(version: 1, keys: ring.publicKeys([0, 1]), threshold: 2, expires: nil),
                                    requireListSignature: false, mode: .static)
        #expect(throws: PinStoreError(.invalidListData, "")) {
            try verifier.verify(PersistedList(mode: .static, body: Data(text.utf8), nextUpdate: 0))
        }
    }
}
