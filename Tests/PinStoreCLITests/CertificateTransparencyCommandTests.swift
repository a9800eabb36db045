import Foundation
import PinStoreTestSupport
import PinStoreTesting
import Testing
@testable import PinStore
import PinStoreSigning

/// `pinstore ct convert`: a log list in the v3 JSON shape, signed by an independent signer
/// (the openssl command line), becomes the section stores read; `sign` puts it in a list and
/// `verify` shows it.
@Suite(.enabled(if: OpenSSLCommand.path != nil, "the openssl command line is not installed"))
struct CertificateTransparencyCommandTests {
    struct Fixture {
        let directory: URL
        let logList: URL
        let signature: URL
        let signerKey: URL
        let keys: [Data]
    }

    static func run(_ arguments: [String]) async throws -> String {
        let result = try await OpenSSLCommand.run(arguments)
        try #require(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// Three logs of two operators (one static-ct-api, one retired with a temporal interval and
    /// an earlier operator), signed with a P-256 key made by openssl.
    static func fixture() async throws -> Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ct-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keys = try (0..<3).map { _ in try P256PrivateKey().publicKey.derRepresentation }
        func log(_ key: Data, state: String) -> String {
            #"{"description": "log", "log_id": "\#(SHA256Digest.hash(key).base64EncodedString())", "key": "\#(key.base64EncodedString())", "url": "https://ct.example/", "mmd": 86400, "state": {"\#(state)": {"timestamp": "2025-01-02T03:04:05Z"}}"#
        }
        let json = """
        {"version": "42.1", "log_list_timestamp": "2026-11-20T00:00:00Z",
         "operators": [
          {"name": "Operator A", "email": ["a@example.com"],
           "logs": [\(log(keys[0], state: "usable"))}],
           "tiled_logs": [\(log(keys[1], state: "qualified")), "submission_url": "https://tiles.example/", "monitoring_url": "https://tiles.example/m/"}]},
          {"name": "Operator B", "email": ["b@example.com"],
           "logs": [\(log(keys[2], state: "retired")), "temporal_interval": {"start_inclusive": "2026-01-01T00:00:00Z", "end_exclusive": "2027-01-01T00:00:00Z"},
                    "previous_operators": [{"name": "Operator C", "end_time": "2024-06-01T00:00:00Z"}]}]}
         ]}
        """
        let logList = directory.appendingPathComponent("log_list.json")
        try Data(json.utf8).write(to: logList)
        let privateKey = directory.appendingPathComponent("signer.key.pem").path
        let signerKey = directory.appendingPathComponent("signer.pub.pem")
        let signature = directory.appendingPathComponent("log_list.sig")
        _ = try await run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", privateKey])
        _ = try await run(["pkey", "-in", privateKey, "-pubout", "-out", signerKey.path])
        _ = try await run(["dgst", "-sha256", "-sign", privateKey, "-out", signature.path, logList.path])
        return Fixture(directory: directory, logList: logList, signature: signature, signerKey: signerKey, keys: keys)
    }

    @Test func aSignedV3LogListBecomesTheSectionStoresRead() async throws {
        let fixture = try await Self.fixture()
        let out = fixture.directory.appendingPathComponent("ct.json")
        let result = try await PinstoreBinary.run(["ct", "convert", fixture.logList.path, "--signature", fixture.signature.path,
                                                   "--signer-key", fixture.signerKey.path, "--host", "api.example.com=enforce",
                                                   "--out", out.path])
        try #require(result.status == 0, "\(result.stderr)")
        let list = try CTLogList(JSONDecoder().decode(CTLogList.Wire.self, from: Data(contentsOf: out)))
        #expect(list.timestamp == 1_795_132_800)   // 2026-11-20T00:00:00Z
        #expect(list.logs.count == 3)
        let tiledID = try #require(Digest32(SHA256Digest.hash(fixture.keys[1])))
        let retiredID = try #require(Digest32(SHA256Digest.hash(fixture.keys[2])))
        let tiled = try #require(list.logs[tiledID])
        #expect(tiled.kind == .staticCTAPI)
        #expect(tiled.state == .qualified)
        let retired = try #require(list.logs[retiredID])
        #expect(retired.state == .retired)
        #expect(retired.stateSince == 1_735_787_045)   // 2025-01-02T03:04:05Z
        #expect(retired.temporalInterval?.start == 1_767_225_600)
        #expect(retired.operatorName(atMilliseconds: 1_700_000_000_000) == "Operator C")
        #expect(list.mode(for: "api.example.com") == .enforce)
    }

    @Test func aLogListWhoseSignatureDoesNotVerifyIsRefused() async throws {
        let fixture = try await Self.fixture()
        var json = try Data(contentsOf: fixture.logList)
        json.append(contentsOf: Array(" ".utf8))
        try json.write(to: fixture.logList)
        let result = try await PinstoreBinary.run(["ct", "convert", fixture.logList.path, "--signature", fixture.signature.path,
                                                   "--signer-key", fixture.signerKey.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("does not verify"))
    }

    @Test func onlyTheChosenOperatorsLogsAreKept() async throws {
        let fixture = try await Self.fixture()
        let result = try await PinstoreBinary.run(["ct", "convert", fixture.logList.path, "--operator", "Operator B"])
        try #require(result.status == 0, "\(result.stderr)")
        let list = try CTLogList(JSONDecoder().decode(CTLogList.Wire.self, from: Data(result.stdout.utf8)))
        #expect(list.logs.values.map(\.operatorName) == ["Operator B"])
    }

    @Test func anOperatorTheLogListDoesNotNameIsRefused() async throws {
        let fixture = try await Self.fixture()
        let result = try await PinstoreBinary.run(["ct", "convert", fixture.logList.path, "--operator", "Operator Z"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("no operator named"))
    }

    @Test func aSignedListCarriesTheSectionAndVerifyShowsIt() async throws {
        let fixture = try await Self.fixture()
        let section = fixture.directory.appendingPathComponent("ct.json")
        let convert = try await PinstoreBinary.run(["ct", "convert", fixture.logList.path, "--out", section.path])
        try #require(convert.status == 0, "\(convert.stderr)")
        let listFile = fixture.directory.appendingPathComponent("list.json")
        let key = TestResources.fixturePath("keys/list-signing.key.pem")
        let sign = try await PinstoreBinary.run(["sign", "--key", key, "--entry",
                                                 "api.example.com,\(Data(repeating: 7, count: 32).base64EncodedString()),4102444799",
                                                 "--certificate-transparency", section.path, "--out", listFile.path])
        try #require(sign.status == 0, "\(sign.stderr)")
        let body = try Data(contentsOf: listFile)
        let document = try FingerprintListDocument(body: body)
        #expect(document.certificateTransparency?.logs?.count == 3)
        let verify = try await PinstoreBinary.run(["verify", listFile.path, "--public-key",
                                                   TestResources.fixturePath("keys/list-signing.pub.pem"),
                                                   "--now", "2026-11-24T00:00:00Z", "--warn-days", "70"])
        #expect(verify.stdout.contains("certificate transparency: 3 logs"))
        // The log list of 2026-11-20 goes stale on 2027-01-29, within 70 days of 2026-11-24.
        #expect(verify.status == 2)
        #expect(verify.stderr.contains("Certificate Transparency log list goes stale"))
    }
}

/// `pinstore ct status`: a chain's SCTs, per SCT, and the verdict stores would reach.
@Suite struct CertificateTransparencyStatusCommandTests {
    /// A chain file (leaf, then its issuer) and a section naming two logs of two operators.
    static func files(sctCount: Int) throws -> (chain: String, section: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ct-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pki = try TestPKI(hosts: ["api.example.test"])
        let logs = [try TestCTLog(), try TestCTLog(keyType: .rsa2048)]
        let leaf = try pki.issueLeaf(for: ["api.example.test"], embedding: logs.prefix(sctCount).map { TestSCT(log: $0) })
        let chain = directory.appendingPathComponent("chain.pem")
        try Data(leaf.certificateChainPEM.utf8).write(to: chain)
        let section = directory.appendingPathComponent("ct.json")
        try TestCTLogList(logs: [.init(logs[0], operatorName: "A"), .init(logs[1], operatorName: "B")]).json().write(to: section)
        return (chain.path, section.path)
    }

    @Test func aCompliantChainIsReportedCompliant() async throws {
        let (chain, section) = try Self.files(sctCount: 2)
        let result = try await PinstoreBinary.run(["ct", "status", "--chain", chain, "--section", section])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.components(separatedBy: ": verified").count == 3)
        #expect(result.stdout.contains("chrome profile: compliant"))
    }

    @Test func aChainWithOneSCTIsReportedNotCompliant() async throws {
        let (chain, section) = try Self.files(sctCount: 1)
        let result = try await PinstoreBinary.run(["ct", "status", "--chain", chain, "--section", section])
        #expect(result.status == 1)
        #expect(result.stdout.contains("NOT compliant"))
    }
}
