import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

@Suite struct P256PublicKeyTests {
    /// The public key the deployed clients' test suites configure (wire-format note).
    static let wultraKey = "BC3kV9OIDnMuVoCdDR9nEA/JidJLTTDLuSA2TSZsGgODSshfbZg31MS90WC/HdbU/A5WL5GmyDkE/iks6INv+XE="

    @Test func parsesBase64UncompressedPoint() throws {
        let key = try P256PublicKey(configuredString: Self.wultraKey)
        #expect(key.x963Representation.base64EncodedString() == Self.wultraKey)
    }

    @Test func compressedPointGivesTheSameKeyAsUncompressed() throws {
        let uncompressed = try TestResources.fixtureText("keys/list-signing.pub.b64")
        let compressed = try TestResources.fixtureText("keys/list-signing.pub-compressed.b64")
        let a = try P256PublicKey(configuredString: uncompressed)
        let b = try P256PublicKey(configuredString: compressed)
        #expect(Data(base64Encoded: compressed.trimmingCharacters(in: .whitespacesAndNewlines))?.count == 33)
        #expect(a.x963Representation == b.x963Representation)
    }

    @Test func derAndPEMGiveTheSameKeyAsThePoint() throws {
        let point = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        let der = try P256PublicKey(derSubjectPublicKeyInfo: TestResources.fixture("keys/list-signing.pub.der"))
        let pem = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.pem"))
        let derBase64 = try P256PublicKey(configuredString: TestResources.fixture("keys/list-signing.pub.der").base64EncodedString())
        #expect(der.x963Representation == point.x963Representation)
        #expect(pem.x963Representation == point.x963Representation)
        #expect(derBase64.x963Representation == point.x963Representation)
    }

    @Test func derRepresentationRoundTripsThroughPEM() throws {
        let key = try P256PublicKey(configuredString: Self.wultraKey)
        let again = try P256PublicKey(pem: key.pemRepresentation)
        #expect(again.derRepresentation == key.derRepresentation)
    }

    @Test func keyOnAnotherCurveIsRefusedAsWrongCurve() throws {
        #expect(throws: PinStoreError(.publicKeyWrongCurve, "")) {
            try P256PublicKey(configuredString: TestResources.fixtureText("keys/secp384r1.pub.pem"))
        }
        #expect(throws: PinStoreError(.publicKeyWrongCurve, "")) {
            try P256PublicKey(derSubjectPublicKeyInfo: TestResources.fixture("keys/secp384r1.pub.der"))
        }
    }

    @Test func rsaKeyIsRefusedAsNotEllipticCurve() throws {
        #expect(throws: PinStoreError(.publicKeyNotEllipticCurve, "")) {
            try P256PublicKey(configuredString: TestResources.fixtureText("keys/rsa-2048.pub.pem"))
        }
    }

    @Test func pointNotOnTheCurveIsRefused() throws {
        var point = Data(base64Encoded: Self.wultraKey)!
        point[64] ^= 0x01 // change Y: the point leaves the curve
        #expect(throws: PinStoreError(.publicKeyNotOnCurve, "")) {
            try P256PublicKey(x963Representation: point)
        }
    }

    @Test func compressedXWithoutACurvePointIsRefused() throws {
        // x = 5 has no square root of x^3 - 3x + b on P-256 (checked with OpenSSL); any failure
        // to decompress must be the typed not-on-curve error.
        var point = Data([0x02]) + Data(repeating: 0, count: 31) + Data([0x05])
        var refusedAsNotOnCurve = false
        for candidate in 0..<64 {
            point[32] = UInt8(candidate)
            do { _ = try P256PublicKey(x963Representation: point) } catch {
                #expect(error.code == .publicKeyNotOnCurve)
                refusedAsNotOnCurve = true
            }
        }
        #expect(refusedAsNotOnCurve)
    }

    @Test func badBase64IsRefusedAsInvalidBase64() {
        #expect(throws: PinStoreError(.invalidBase64, "")) {
            try P256PublicKey(configuredString: "not base64 at all!")
        }
    }

    @Test func pointOfWrongLengthIsRefusedAsWrongLength() {
        #expect(throws: PinStoreError(.publicKeyWrongLength, "")) {
            try P256PublicKey(configuredString: Data(repeating: 4, count: 64).base64EncodedString())
        }
        #expect(throws: PinStoreError(.publicKeyWrongLength, "")) {
            try P256PublicKey(x963Representation: Data())
        }
    }

    @Test func pointWithUnknownPrefixIsRefusedAsMalformed() {
        var point = Data(base64Encoded: Self.wultraKey)!
        point[0] = 0x07
        #expect(throws: PinStoreError(.publicKeyMalformed, "")) {
            try P256PublicKey(x963Representation: point)
        }
    }

    @Test func truncatedDERIsRefusedAsMalformed() throws {
        let der = try TestResources.fixture("keys/list-signing.pub.der")
        #expect(throws: PinStoreError(.publicKeyMalformed, "")) {
            try P256PublicKey(derSubjectPublicKeyInfo: der.prefix(der.count - 1))
        }
    }

    @Test func pemWithoutPublicKeyBlockIsRefusedAsInvalidPEM() throws {
        #expect(throws: PinStoreError(.invalidPEM, "")) {
            try P256PublicKey(pem: TestResources.fixtureText("pki/localhost.pem"))
        }
    }
}

@Suite struct SignatureTests {
    @Test func signatureFromPrivateKeyVerifiesWithItsPublicKey() throws {
        let key = try P256PrivateKey()
        let message = Data("name&fingerprint&1".utf8)
        let signature = try key.signature(for: message)
        #expect(try key.publicKey.isValidSignature(signature, for: message))
    }

    @Test func signatureDoesNotVerifyForAnotherMessage() throws {
        let key = try P256PrivateKey()
        let signature = try key.signature(for: Data("a".utf8))
        #expect(try !key.publicKey.isValidSignature(signature, for: Data("b".utf8)))
    }

    @Test func signatureDoesNotVerifyWithAnotherKey() throws {
        let signature = try P256PrivateKey().signature(for: Data("a".utf8))
        #expect(try !P256PrivateKey().publicKey.isValidSignature(signature, for: Data("a".utf8)))
    }

    @Test func malformedSignatureBytesSimplyDoNotVerify() throws {
        let publicKey = try P256PrivateKey().publicKey
        let message = Data("a".utf8)
        for garbage in [Data(), Data([0x30]), Data([0x30, 0x44, 0x02, 0x20]), Data(repeating: 0xff, count: 72), Data(repeating: 0, count: 10_000)] {
            #expect(!publicKey.isValidSignature(garbage, for: message))
            #expect(!publicKey.isValidRawSignature(garbage, for: message))
        }
    }

    @Test func encryptedPrivateKeyRoundTripsWithItsPassphrase() throws {
        let key = try P256PrivateKey()
        let pem = try key.pkcs8PEM(passphrase: "correct horse")
        #expect(pem.contains("ENCRYPTED PRIVATE KEY"))
        let again = try P256PrivateKey(pem: pem, passphrase: "correct horse")
        #expect(try again.publicKey.x963Representation == key.publicKey.x963Representation)
        #expect(throws: PinStoreError(.privateKeyInvalid, "")) {
            try P256PrivateKey(pem: pem, passphrase: "wrong")
        }
    }

    @Test func fixtureSigningKeyMatchesItsPublishedPublicKey() throws {
        let privateKey = try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
        let published = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        #expect(try privateKey.publicKey.x963Representation == published.x963Representation)
    }
}
