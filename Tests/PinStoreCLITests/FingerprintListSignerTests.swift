import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// The list signer produces what clients accept, in the documented format.
struct FingerprintListSignerTests {
    static func signingKey() throws -> P256PrivateKey {
        try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
    }

    static func publicKey() throws -> P256PublicKey {
        try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
    }

    static func entries() throws -> [FingerprintEntry] {
        try ["pki/localhost.pem", "pki/api-p256.pem", "pki/api-rsa.pem", "pki/wildcard.pem"].map { path in
            let certificate = try TestResources.certificate(path)
            return FingerprintEntry(name: try #require(certificate.commonName), fingerprint: certificate.fingerprint,
                                    expires: Int64(certificate.notAfter.timeIntervalSince1970))
        }
    }

    @Test func signedStaticListParsesAndVerifiesWithTheLibrary() throws {
        let entries = try Self.entries()
        let json = try FingerprintListSigner(privateKey: Self.signingKey()).staticList(entries)
        let document = try FingerprintListDocument(body: json)
        let verified = try ListSignatureVerifier(publicKey: Self.publicKey()).verifyStatic(document)
        #expect(verified == entries)
    }

    @Test func signedStaticListIsRefusedUnderAnotherKey() throws {
        let json = try FingerprintListSigner(privateKey: Self.signingKey()).staticList(Self.entries())
        let otherKey = try P256PublicKey(configuredString: TestResources.fixtureText("keys/other-signing.pub.b64"))
        #expect(throws: PinStoreError(.invalidListSignature, "")) {
            try ListSignatureVerifier(publicKey: otherKey).verifyStatic(FingerprintListDocument(body: json))
        }
    }

    @Test func entryMembersAreWrittenInWireOrder() throws {
        let entry = try Self.entries()[0]
        let json = String(decoding: try FingerprintListSigner(privateKey: Self.signingKey()).staticList([entry]), as: UTF8.self)
        let prefix = "{\"name\": \"localhost\", \"fingerprint\": \"\(entry.fingerprint.base64EncodedString())\", \"expires\": \(entry.expires), \"signature\": \""
        #expect(json.contains(prefix))
    }

    @Test func signingTwiceGivesTheSameLayout() throws {
        // ECDSA signatures are randomised, so compare the lists with signatures removed.
        let signer = FingerprintListSigner(privateKey: try Self.signingKey())
        func withoutSignatures(_ data: Data) -> String {
            String(decoding: data, as: UTF8.self).replacingOccurrences(of: #""signature": "[^"]*""#, with: "", options: .regularExpression)
        }
        let entries = try Self.entries()
        #expect(withoutSignatures(try signer.staticList(entries)) == withoutSignatures(try signer.staticList(entries)))
    }

    @Test func depthIsWrittenOnlyWhenNotZero() throws {
        let leaf = try Self.entries()[0]
        let issuer = try TestResources.certificate("pki/intermediate-ca.pem")
        let pinned = FingerprintEntry(name: "localhost", fingerprint: issuer.fingerprint, expires: leaf.expires, depth: 1)
        let json = try FingerprintListSigner(privateKey: Self.signingKey()).staticList([leaf, pinned])
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.components(separatedBy: "\"depth\"").count == 2)
        #expect(try FingerprintListDocument(body: json).entries.map(\.entry.depth) == [0, 1])
    }

    @Test func emptyEntryListGivesAnEmptyFingerprintsArray() throws {
        let json = try FingerprintListSigner(privateKey: Self.signingKey()).staticList([])
        #expect(try FingerprintListDocument(body: json).entries.isEmpty)
    }

    @Test func entryClientsWouldRejectIsRefused() throws {
        let short = FingerprintEntry(name: "localhost", fingerprint: Data(repeating: 1, count: 31), expires: 4_102_444_799)
        #expect(throws: PinStoreError(.invalidListData, "")) {
            try FingerprintListSigner(privateKey: Self.signingKey()).staticList([short])
        }
    }

    @Test func nameNoHostCanHaveIsRefusedBeforeSigning() throws {
        // A quote, a backslash, a port or a scheme: such an entry could never match a
        // connection (clients of this version refuse the list; it pins nothing anywhere).
        for name in ["we\"ird\\name", "api.example.com:443", "https://api.example.com"] {
            let entry = FingerprintEntry(name: name, fingerprint: Data(repeating: 7, count: 32), expires: 4_102_444_799)
            #expect(throws: PinStoreError(.invalidListData, "")) {
                try FingerprintListSigner(privateKey: Self.signingKey()).staticList([entry])
            }
        }
    }

    @Test func challengeModeBodyCarriesTimestampAndNoEntrySignatures() throws {
        let json = try FingerprintListSigner.challengeModeBody(Self.entries(), timestamp: 1_767_225_600)
        let document = try FingerprintListDocument(body: json)
        #expect(document.timestamp == 1_767_225_600)
        #expect(document.entries.allSatisfy { $0.signature == nil })
        #expect(document.entries.map(\.entry) == (try Self.entries()))
    }

    @Test func challengeResponseSignatureVerifiesForItsChallenge() throws {
        let challenge = try TestResources.fixtureText("lists/challenge.txt")
        let body = try FingerprintListSigner.challengeModeBody(Self.entries(), timestamp: 1_767_225_600)
        let header = try FingerprintListSigner(privateKey: Self.signingKey()).challengeResponseSignature(challenge: challenge, body: body)
        try ListSignatureVerifier(publicKey: Self.publicKey()).verifyChallenge(body: body, challenge: challenge, signatureHeader: header)
    }

    @Test func challengeResponseSignatureFailsForAnotherChallenge() throws {
        let challenge = try TestResources.fixtureText("lists/challenge.txt")
        let other = try TestResources.fixtureText("lists/challenge-other.txt")
        let body = try FingerprintListSigner.challengeModeBody(Self.entries(), timestamp: 1_767_225_600)
        let header = try FingerprintListSigner(privateKey: Self.signingKey()).challengeResponseSignature(challenge: other, body: body)
        #expect(throws: PinStoreError(.invalidListSignature, "")) {
            try ListSignatureVerifier(publicKey: Self.publicKey()).verifyChallenge(body: body, challenge: challenge, signatureHeader: header)
        }
    }
}
