import Foundation
import PinStoreTestSupport
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

/// The deployed clients' real signed list (`staticList` in compat.json) through the store.
@Suite(.enabled(if: TestResources.sharedVectorsAvailable, TestResources.sharedVectorsMissing))
struct WultraStaticListTests {
    struct StaticList: Decodable { let publicKey: String; let json: String; let signedBytes: [String] }
    struct Compat: Decodable { let staticList: StaticList }

    static func load() throws -> StaticList {
        try JSONDecoder().decode(Compat.self, from: TestResources.sharedVector("wultra/compat.json")).staticList
    }

    func store(_ list: StaticList, clock: ManualClock, directory: TemporaryDirectory) throws -> PinStore {
        let configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
                                                   publicKey: list.publicKey, storageDirectory: directory.url)
        return try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data(list.json.utf8)), clock: clock)
    }

    @Test func entrySignaturesVerifyWithTheDeployedKey() throws {
        let list = try Self.load()
        let document = try FingerprintListDocument(body: Data(list.json.utf8))
        let entries = try ListSignatureVerifier(publicKey: P256PublicKey(configuredString: list.publicKey)).verifyStatic(document)
        #expect(entries.map { String(decoding: $0.signedBytes, as: UTF8.self) } == list.signedBytes)
    }

    @Test func pinIsTrustedWithClockAtStartOf2024() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try store(Self.load(), clock: ManualClock(Date(timeIntervalSince1970: 1_704_067_200)), directory: directory)
        #expect(await store.update() == .ok)
        let fingerprint = try #require(Data(base64Encoded: "kqN/vV4hpTqVxxbhFE9EL1grlND6/Gc+tnF6TrUaiKc="))
        #expect(store.matchPins(commonName: "github.com", fingerprint: fingerprint) == .trusted)
        #expect(store.matchPins(commonName: "github.com", fingerprint: Data(count: 32)) == .untrusted)
    }

    @Test func updateWithTodaysClockReportsStoreIsEmpty() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try store(Self.load(), clock: ManualClock(Date()), directory: directory)
        #expect(await store.update() == .storeIsEmpty)
    }
}
