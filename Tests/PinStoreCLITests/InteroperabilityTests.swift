import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// `pinstore` against the openssl command line and the library, both directions.
@Suite(.enabled(if: OpenSSLCommand.path != nil, "the openssl command line is not installed"))
struct InteroperabilityTests {
    static let keyPath = TestResources.fixturePath("keys/list-signing.key.pem")
    static let publicKeyPEMPath = TestResources.fixturePath("keys/list-signing.pub.pem")
    static let certificates = ["pki/localhost.pem", "pki/api-p256.pem", "pki/api-rsa.pem", "pki/wildcard.pem"]

    struct WireEntry: Decodable {
        let name: String
        let fingerprint: String
        let expires: Int64
        let signature: String
    }

    struct WireList: Decodable {
        let fingerprints: [WireEntry]
    }

    /// Signs the fixture certificates with `pinstore sign` and returns the list file.
    static func signWithPinstore(in directory: URL) async throws -> URL {
        let out = directory.appendingPathComponent("list.json")
        let result = try await PinstoreBinary.run(["sign", "--key", keyPath, "--cert"]
            + certificates.map(TestResources.fixturePath) + ["--out", out.path])
        try #require(result.status == 0, "pinstore sign failed: \(result.stderr)")
        return out
    }

    /// Signs `message` with `openssl dgst -sha256 -sign`, returning Base64 of the DER signature.
    static func signWithOpenSSL(_ message: String, in directory: URL) async throws -> String {
        let messageFile = directory.appendingPathComponent("message-\(UUID().uuidString)")
        let signatureFile = directory.appendingPathComponent("signature-\(UUID().uuidString)")
        try Data(message.utf8).write(to: messageFile)
        let result = try await OpenSSLCommand.run(["dgst", "-sha256", "-sign", keyPath, "-out", signatureFile.path, messageFile.path])
        try #require(result.status == 0, "openssl dgst -sign failed: \(result.stderr)")
        return try Data(contentsOf: signatureFile).base64EncodedString()
    }

    /// A static list whose entries (from the fixture certificates) were signed by the openssl CLI.
    static func listSignedWithOpenSSL(in directory: URL) async throws -> (url: URL, entries: [FingerprintEntry]) {
        var items: [[String: Any]] = []
        var entries: [FingerprintEntry] = []
        for path in certificates {
            let certificate = try TestResources.certificate(path)
            let entry = FingerprintEntry(name: try #require(certificate.commonName), fingerprint: certificate.fingerprint,
                                         expires: Int64(certificate.notAfter.timeIntervalSince1970))
            // The documented signed string, spelled out here rather than taken from the library.
            let message = "\(entry.name)&\(certificate.fingerprintBase64)&\(entry.expires)"
            items.append(["name": entry.name, "fingerprint": certificate.fingerprintBase64, "expires": entry.expires,
                          "signature": try await signWithOpenSSL(message, in: directory)])
            entries.append(entry)
        }
        let url = directory.appendingPathComponent("openssl-list.json")
        try JSONSerialization.data(withJSONObject: ["fingerprints": items]).write(to: url)
        return (url, entries)
    }

    @Test func pinstoreSignedEntriesVerifyWithOpenSSLDgst() async throws {
        let directory = try TestResources.temporaryDirectory()
        let list = try JSONDecoder().decode(WireList.self, from: Data(contentsOf: await Self.signWithPinstore(in: directory)))
        #expect(list.fingerprints.count == Self.certificates.count)
        for (index, entry) in list.fingerprints.enumerated() {
            let message = directory.appendingPathComponent("signed-\(index).txt")
            let signature = directory.appendingPathComponent("signature-\(index).der")
            try Data("\(entry.name)&\(entry.fingerprint)&\(entry.expires)".utf8).write(to: message)
            try #require(Data(base64Encoded: entry.signature)).write(to: signature)
            let result = try await OpenSSLCommand.run(["dgst", "-sha256", "-verify", Self.publicKeyPEMPath,
                                                       "-signature", signature.path, message.path])
            #expect(result.status == 0, "entry \(entry.name): \(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("Verified OK"))
        }
    }

    @Test func pinstoreSignedEntriesCarryTheCertificatesFingerprintsAndExpiry() async throws {
        let directory = try TestResources.temporaryDirectory()
        let list = try JSONDecoder().decode(WireList.self, from: Data(contentsOf: await Self.signWithPinstore(in: directory)))
        let expected = try Self.certificates.map { try TestResources.certificate($0) }
        #expect(list.fingerprints.map(\.name) == expected.map { $0.commonName ?? "" })
        #expect(list.fingerprints.map(\.fingerprint) == expected.map(\.fingerprintBase64))
        #expect(list.fingerprints.map(\.expires) == expected.map { Int64($0.notAfter.timeIntervalSince1970) })
    }

    @Test func pinstoreSignedListIsAcceptedByTheLibrary() async throws {
        let directory = try TestResources.temporaryDirectory()
        let body = try Data(contentsOf: await Self.signWithPinstore(in: directory))
        let key = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        let entries = try ListSignatureVerifier(publicKey: key).verifyStatic(FingerprintListDocument(body: body))
        #expect(entries.count == Self.certificates.count)
    }

    @Test func openSSLSignedEntriesAreAcceptedByPinstoreVerify() async throws {
        let directory = try TestResources.temporaryDirectory()
        let list = try await Self.listSignedWithOpenSSL(in: directory)
        let result = try await PinstoreBinary.run(["verify", list.url.path, "--public-key", TestResources.fixturePath("keys/list-signing.pub.b64")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let validRows = result.stdout.split(separator: "\n").filter { $0.hasPrefix("valid ") }
        #expect(validRows.count == list.entries.count)
    }

    @Test func openSSLSignedEntriesAreAcceptedByTheLibrary() async throws {
        let directory = try TestResources.temporaryDirectory()
        let list = try await Self.listSignedWithOpenSSL(in: directory)
        let key = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        let entries = try ListSignatureVerifier(publicKey: key).verifyStatic(FingerprintListDocument(body: Data(contentsOf: list.url)))
        #expect(entries == list.entries)
    }

    @Test func openSSLSignedChallengeResponseIsAcceptedByPinstoreVerify() async throws {
        let directory = try TestResources.temporaryDirectory()
        let challenge = try TestResources.fixtureText("lists/challenge.txt")
        let bodyText = try TestResources.fixtureText("lists/challenge-good.json")
        let signature = try await Self.signWithOpenSSL(challenge + "&" + bodyText, in: directory)
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/challenge-good.json"),
                                                   "--public-key", Self.publicKeyPEMPath,
                                                   "--challenge", challenge, "--signature", signature])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    @Test func pinstoreVerifyRefusesAnEntrySignedOverAnotherString() async throws {
        let directory = try TestResources.temporaryDirectory()
        let certificate = try TestResources.certificate("pki/localhost.pem")
        let expires = Int64(certificate.notAfter.timeIntervalSince1970)
        // Signed over the hex fingerprint instead of the Base64 one: a classic signer mistake.
        let signature = try await Self.signWithOpenSSL("localhost&\(certificate.fingerprintHex)&\(expires)", in: directory)
        let url = directory.appendingPathComponent("wrong-string.json")
        try JSONSerialization.data(withJSONObject: ["fingerprints": [[
            "name": "localhost", "fingerprint": certificate.fingerprintBase64, "expires": expires, "signature": signature,
        ]]]).write(to: url)
        let result = try await PinstoreBinary.run(["verify", url.path, "--public-key", Self.publicKeyPEMPath])
        #expect(result.status == 1)
        #expect(result.stdout.contains("bad signature"))
    }
}

/// The deployed clients' vectors in `../shared/vectors/wultra/compat.json`.
@Suite(.enabled(if: TestResources.sharedVectorsAvailable, TestResources.sharedVectorsMissing))
struct CompatibilityVectorCLITests {
    struct Compat: Decodable {
        struct StaticList: Decodable { let publicKey: String; let json: String }
        struct CertificateEntry: Decodable {
            let pem: String; let expectedName: String; let expectedFingerprintHex: String
            let expectedFingerprintBase64: String; let expectedExpires: Int64
        }
        let staticList: StaticList
        let certificateEntry: CertificateEntry
    }

    struct FingerprintJSON: Decodable {
        let entryName: String?
        let fingerprint: String
        let fingerprintHex: String
        let expires: Int64
    }

    static func load() throws -> Compat {
        try JSONDecoder().decode(Compat.self, from: TestResources.sharedVector("wultra/compat.json"))
    }

    static func writeStaticList() throws -> (path: String, publicKey: String) {
        let compat = try load()
        let url = try TestResources.temporaryDirectory().appendingPathComponent("compat-static.json")
        try Data(compat.staticList.json.utf8).write(to: url)
        return (url.path, compat.staticList.publicKey)
    }

    @Test func staticListPassesVerifyAsOfStartOf2024() async throws {
        let list = try Self.writeStaticList()
        // 1704067200 = 2024-01-01T00:00:00Z, before the entry's expiry on 2024-03-14.
        let result = try await PinstoreBinary.run(["verify", list.path, "--public-key", list.publicKey, "--now", "1704067200"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("valid          github.com"))
    }

    @Test func staticListFailsTodayAsExpiredNotAsBadSignature() async throws {
        let list = try Self.writeStaticList()
        let result = try await PinstoreBinary.run(["verify", list.path, "--public-key", list.publicKey])
        #expect(result.status == 1)
        #expect(result.stdout.contains("expired        github.com"))
        #expect(!result.stdout.contains("bad signature"))
    }

    @Test func fingerprintReproducesTheCertificateEntry() async throws {
        let entry = try Self.load().certificateEntry
        let url = try TestResources.temporaryDirectory().appendingPathComponent("google.pem")
        try Data(entry.pem.utf8).write(to: url)
        let result = try await PinstoreBinary.run(["fingerprint", url.path, "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        let reported = try #require(try JSONDecoder().decode([FingerprintJSON].self, from: Data(result.stdout.utf8)).first)
        #expect(reported.entryName == entry.expectedName)
        #expect(reported.fingerprint == entry.expectedFingerprintBase64)
        #expect(reported.fingerprintHex == entry.expectedFingerprintHex)
        #expect(reported.expires == entry.expectedExpires)
    }

    @Test func fingerprintTextShowsTheListEntryLine() async throws {
        let entry = try Self.load().certificateEntry
        let url = try TestResources.temporaryDirectory().appendingPathComponent("google.pem")
        try Data(entry.pem.utf8).write(to: url)
        let result = try await PinstoreBinary.run(["fingerprint", url.path])
        #expect(result.stdout.contains("list entry:          \(entry.expectedName),\(entry.expectedFingerprintBase64),\(entry.expectedExpires)"))
    }
}
