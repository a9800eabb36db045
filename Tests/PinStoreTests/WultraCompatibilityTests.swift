import Foundation
import Testing
@testable import PinStore

/// Vectors from the deployed dynamic-pinning clients, read from `../shared/vectors/wultra/`.
@Suite(.enabled(if: TestResources.sharedVectorsAvailable, TestResources.sharedVectorsMissing))
struct WultraCompatibilityTests {
    struct Compat: Decodable {
        struct Raw: Decodable {
            struct Vector: Decodable { let publicKey: String; let message: String; let signature: String }
            let vectors: [Vector]
        }
        struct CertificateEntry: Decodable {
            let pem: String; let expectedName: String; let expectedFingerprintHex: String
            let expectedFingerprintBase64: String; let expectedExpires: Int
        }
        struct SeedSPKI: Decodable { let pem: String; let expectedSPKISHA256Base64: String }
        let rawSignatures: Raw
        let certificateEntry: CertificateEntry
        let seedSPKI: SeedSPKI
    }

    static func load() throws -> Compat {
        try JSONDecoder().decode(Compat.self, from: TestResources.sharedVector("wultra/compat.json"))
    }

    @Test func rawSignatureVectorsVerify() throws {
        let vectors = try Self.load().rawSignatures.vectors
        #expect(!vectors.isEmpty)
        for vector in vectors {
            let key = try P256PublicKey(configuredString: vector.publicKey)
            let signature = try #require(Data(base64Encoded: vector.signature))
            #expect(key.isValidSignature(signature, for: Data(vector.message.utf8)))
            #expect(!key.isValidSignature(signature, for: Data((vector.message + "0").utf8)))
        }
    }

    @Test func realCertificateYieldsTheDeployedEntry() throws {
        let entry = try Self.load().certificateEntry
        let certificate = try #require(try X509Certificate.certificates(pem: entry.pem).first)
        #expect(certificate.commonName == entry.expectedName)
        #expect(certificate.fingerprintBase64 == entry.expectedFingerprintBase64)
        #expect(certificate.fingerprintHex == entry.expectedFingerprintHex)
        #expect(Int(certificate.notAfter.timeIntervalSince1970) == entry.expectedExpires)
        #expect(certificate.dnsNames == ["www.google.com"])
    }

    @Test func seedRootYieldsItsSPKIPin() throws {
        let seed = try Self.load().seedSPKI
        let certificate = try #require(try X509Certificate.certificates(pem: seed.pem).first)
        #expect(certificate.spkiSHA256Base64 == seed.expectedSPKISHA256Base64)
        #expect(certificate.commonName == "DigiCert Global Root CA")
    }
}
