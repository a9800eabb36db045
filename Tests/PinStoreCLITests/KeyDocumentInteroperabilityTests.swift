import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Key documents and multi-signed lists made by an independent signer (the openssl command
/// line, with the JSON spelled out here from the documented format) verify in the library and
/// in `pinstore`; and what `pinstore keys` makes verifies with `openssl dgst -verify`.
@Suite(.enabled(if: OpenSSLCommand.path != nil, "the openssl command line is not installed"))
struct KeyDocumentInteroperabilityTests {
    /// A P-256 key made by openssl: its PEM file, the Base64 X9.63 point and its key ID.
    struct OpenSSLKey {
        let path: String
        let point: String
        let keyID: String
    }

    static func run(_ arguments: [String]) async throws -> String {
        let result = try await OpenSSLCommand.run(arguments)
        try #require(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    static func makeKey(_ name: String, in directory: URL) async throws -> OpenSSLKey {
        let path = directory.appendingPathComponent("\(name).key.pem").path
        let spki = directory.appendingPathComponent("\(name).pub.der").path
        _ = try await run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        _ = try await run(["pkey", "-in", path, "-pubout", "-outform", "DER", "-out", spki])
        // A P-256 SubjectPublicKeyInfo ends with the 65-byte uncompressed point.
        let point = try Data(contentsOf: URL(fileURLWithPath: spki)).suffix(65)
        try #require(point.first == 0x04)
        let pointFile = directory.appendingPathComponent("\(name).point")
        try point.write(to: pointFile)
        let digest = try await run(["dgst", "-sha256", "-r", pointFile.path])
        let keyID = String(digest.split(separator: " ")[0])
        return OpenSSLKey(path: path, point: point.base64EncodedString(), keyID: keyID)
    }

    /// Base64 of `openssl dgst -sha256 -sign key` over `message`.
    static func sign(_ message: String, with key: OpenSSLKey, in directory: URL) async throws -> String {
        let input = directory.appendingPathComponent("message-\(UUID().uuidString)")
        let output = directory.appendingPathComponent("signature-\(UUID().uuidString)")
        try Data(message.utf8).write(to: input)
        _ = try await run(["dgst", "-sha256", "-sign", key.path, "-out", output.path, input.path])
        return try Data(contentsOf: output).base64EncodedString()
    }

    /// An envelope (the JSON spelled out) over `payload`, signed by `signers`.
    static func envelope(_ payload: String, signers: [OpenSSLKey], in directory: URL) async throws -> String {
        var signatures: [String] = []
        for key in signers {
            signatures.append(#"{"keyid":"\#(key.keyID)","signature":"\#(try await sign(payload, with: key, in: directory))"}"#)
        }
        return #"{"signed":"\#(Data(payload.utf8).base64EncodedString())","signatures":[\#(signatures.joined(separator: ","))]}"#
    }

    /// A static list pinning one entry, signed per entry by `keys[0]` and as a whole by all of
    /// them (labelled signatures first, over the body with both members empty; then the first).
    static func list(keys: [OpenSSLKey], version: Int64, expires: Int64, in directory: URL) async throws -> String {
        let fingerprint = Data(repeating: 9, count: 32).base64EncodedString()
        let entryExpires: Int64 = 4_102_444_799
        let entrySignature = try await sign("api.example.com&\(fingerprint)&\(entryExpires)", with: keys[0], in: directory)
        let tail = #","version":\#(version),"expires":\#(expires),"timestamp":1893456000,"fingerprints":[{"name":"api.example.com","fingerprint":"\#(fingerprint)","expires":\#(entryExpires),"signature":"\#(entrySignature)"}]}"#
        let empty = #"{"listSignature":"","listSignatures":[]"# + tail
        var labelled: [String] = []
        for key in keys.dropFirst() {
            labelled.append(#"{"keyid":"\#(key.keyID)","signature":"\#(try await sign(empty, with: key, in: directory))"}"#)
        }
        let withLabelled = #"{"listSignature":"","listSignatures":[\#(labelled.joined(separator: ","))]"# + tail
        let first = try await sign(withLabelled, with: keys[0], in: directory)
        return withLabelled.replacingOccurrences(of: #"{"listSignature":"""#, with: #"{"listSignature":"\#(first)""#)
    }

    @Test func aKeyDocumentChainAndAListSignedByOpenSSLVerify() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var keys: [OpenSSLKey] = []
        for name in ["a", "b", "c", "d"] { keys.append(try await Self.makeKey(name, in: directory)) }
        // Version 1 (configured): a, b, c with threshold 2. Version 2: b, c, d with threshold 2.
        let payload = #"{"type":"pinstore-keys","version":2,"expires":1924992000,"threshold":2,"keys":["\#(keys[1].point)","\#(keys[2].point)","\#(keys[3].point)"]}"#
        let chain = Data(#"{"keyDocuments":[\#(try await Self.envelope(payload, signers: [keys[0], keys[1], keys[2], keys[3]], in: directory))]}"#.utf8)
        let configured = try keys[0...2].map { try P256PublicKey(configuredString: $0.point) }
        let followed = try KeyDocumentTools.verify(chain, keys: configured, threshold: 2, trustedVersion: 1,
                                                   now: Date(timeIntervalSince1970: 1_893_456_000))
        #expect(followed.map(\.version) == [2])
        #expect(followed.first?.keyIDs == [keys[1].keyID, keys[2].keyID, keys[3].keyID])

        let body = Data(try await Self.list(keys: [keys[2], keys[3]], version: 7, expires: 1_900_000_000, in: directory).utf8)
        let setTwo = try keys[1...3].map { try P256PublicKey(configuredString: $0.point) }
        let verified = try KeyDocumentTools.verifyStaticList(body, keys: setTwo, threshold: 2)
        #expect(verified.version == 7)
        #expect(verified.expires == 1_900_000_000)
        #expect(verified.entries.map(\.name) == ["api.example.com"])
        // And `pinstore verify --keys` agrees, as of a time before the list expires.
        let chainFile = directory.appendingPathComponent("keys.json")
        let listFile = directory.appendingPathComponent("list.json")
        try chain.write(to: chainFile)
        try body.write(to: listFile)
        let cli = try await PinstoreBinary.run(["verify", listFile.path, "--keys", chainFile.path, "--now", "1893456000"])
        #expect(cli.status == 0, "\(cli.stdout) \(cli.stderr)")
        #expect(cli.stdout.contains("version: 7"))
    }

    @Test func oneOpenSSLKeyAloneDoesNotMeetAThresholdOfTwo() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var keys: [OpenSSLKey] = []
        for name in ["a", "b"] { keys.append(try await Self.makeKey(name, in: directory)) }
        let body = Data(try await Self.list(keys: [keys[0]], version: 1, expires: 1_900_000_000, in: directory).utf8)
        let set = try keys.map { try P256PublicKey(configuredString: $0.point) }
        #expect(throws: PinStoreError(.invalidListSignature, "")) {
            try KeyDocumentTools.verifyStaticList(body, keys: set, threshold: 2)
        }
    }

    @Test func aKeyDocumentMadeByPinstoreVerifiesWithOpenSSLDgst() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = try await Self.makeKey("a", in: directory)
        let out = directory.appendingPathComponent("keys.json")
        let made = try await PinstoreBinary.run(["keys", "create", "--public-key", key.point, "--threshold", "1",
                                                 "--expires", "2031-01-01T00:00:00Z", "--sign-with", key.path, "--out", out.path])
        try #require(made.status == 0, "pinstore keys create: \(made.stderr)")
        struct File: Decodable {
            struct Envelope: Decodable {
                struct Signature: Decodable { let keyid: String; let signature: String }
                let signed: String
                let signatures: [Signature]
            }
            let keyDocuments: [Envelope]
        }
        let envelope = try #require(try JSONDecoder().decode(File.self, from: Data(contentsOf: out)).keyDocuments.first)
        #expect(envelope.signatures.map(\.keyid) == [key.keyID])
        let payload = directory.appendingPathComponent("payload.json")
        let signature = directory.appendingPathComponent("signature.der")
        try #require(Data(base64Encoded: envelope.signed)).write(to: payload)
        try #require(Data(base64Encoded: envelope.signatures[0].signature)).write(to: signature)
        let publicKey = directory.appendingPathComponent("a.pub.pem").path
        _ = try await Self.run(["pkey", "-in", key.path, "-pubout", "-out", publicKey])
        let verified = try await OpenSSLCommand.run(["dgst", "-sha256", "-verify", publicKey, "-signature", signature.path, payload.path])
        #expect(verified.stdout.contains("Verified OK"), "\(verified.stdout) \(verified.stderr)")
        #expect(String(decoding: try Data(contentsOf: payload), as: UTF8.self).contains("\"type\": \"pinstore-keys\""))
    }
}
