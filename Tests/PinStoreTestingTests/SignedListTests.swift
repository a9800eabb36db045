import Foundation
import PinStore
import PinStoreTesting
import Testing

/// Fixture lists signed with the throwaway key, verified with PinStore's public verifier.
@Suite struct SignedListTests {
    static func list() throws -> (TestPKI, TestPinList) {
        let pki = try TestPKI(hosts: ["localhost", "api.example.test"])
        return (pki, TestPinList(pinning: [pki.leaf.certificate]))
    }

    @Test func listFromACertificatePinsItUnderEachOfItsNamesUntilItExpires() throws {
        let (pki, list) = try Self.list()
        let expires = Int64(pki.leaf.certificate.notAfter.timeIntervalSince1970)
        #expect(list.entries == [
            FingerprintEntry(name: "localhost", fingerprint: pki.leaf.certificate.fingerprint, expires: expires),
            FingerprintEntry(name: "api.example.test", fingerprint: pki.leaf.certificate.fingerprint, expires: expires),
        ])
    }

    @Test func staticListVerifiesWithTheThrowawayKey() throws {
        let (_, list) = try Self.list()
        let key = try TestListSigningKey()
        let entries = try FingerprintList.verifiedEntries(staticList: key.signedStaticList(list), publicKey: key.publicKey)
        #expect(entries == list.entries)
    }

    @Test func staticListFromFingerprintsVerifies() throws {
        let entry = FingerprintEntry(name: "api.example.test", fingerprint: Data(repeating: 7, count: 32), expires: 1_900_000_000)
        let key = try TestListSigningKey()
        let body = try key.signedStaticList(TestPinList(entries: [entry]))
        #expect(try FingerprintList.verifiedEntries(staticList: body, publicKey: key.publicKey) == [entry])
    }

    @Test func staticListCarriesTheWholeListSignature() throws {
        let (_, list) = try Self.list()
        let body = try TestListSigningKey().signedStaticList(list)
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("{\n  \"listSignature\": \"M"))
    }

    @Test func tamperedStaticListDoesNotVerify() throws {
        let (_, list) = try Self.list()
        let key = try TestListSigningKey()
        let text = String(decoding: try key.signedStaticList(list), as: UTF8.self)
        let tampered = Data(text.replacingOccurrences(of: "\"api.example.test\"", with: "\"api.example.tesu\"").utf8)
        #expect(tampered != Data(text.utf8))
        #expect(throws: PinStoreError.self) { try FingerprintList.verifiedEntries(staticList: tampered, publicKey: key.publicKey) }
    }

    @Test func staticListDoesNotVerifyWithAnotherKey() throws {
        let (_, list) = try Self.list()
        let body = try TestListSigningKey().signedStaticList(list)
        #expect(throws: PinStoreError.self) { try FingerprintList.verifiedEntries(staticList: body, publicKey: TestListSigningKey().publicKey) }
    }

    @Test func challengeResponseVerifiesForItsChallenge() throws {
        let (_, list) = try Self.list()
        let key = try TestListSigningKey()
        let challenge = Data(repeating: 1, count: 16).base64EncodedString()
        let response = try key.challengeResponse(list, challenge: challenge)
        let verified = try FingerprintList.verifiedEntries(challengeResponse: response.body, challenge: challenge,
                                                           signature: response.signature, publicKey: key.publicKey)
        #expect(verified.entries == list.entries)
    }

    @Test func challengeResponseDoesNotVerifyForAnotherChallenge() throws {
        let (_, list) = try Self.list()
        let key = try TestListSigningKey()
        let response = try key.challengeResponse(list, challenge: Data(repeating: 1, count: 16).base64EncodedString())
        #expect(throws: PinStoreError.self) {
            try FingerprintList.verifiedEntries(challengeResponse: response.body, challenge: Data(repeating: 2, count: 16).base64EncodedString(),
                                                signature: response.signature, publicKey: key.publicKey)
        }
    }

    @Test func unnamedTimestampsIncreaseFromListToList() throws {
        let (_, list) = try Self.list()
        let key = try TestListSigningKey()
        let first = try key.challengeResponse(list, challenge: "").body
        let second = try key.challengeResponse(list, challenge: "").body
        func timestamp(_ body: Data) throws -> Int64 {
            let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            return try #require((object["timestamp"] as? NSNumber)?.int64Value)
        }
        #expect(try timestamp(second) > timestamp(first))
    }
}
