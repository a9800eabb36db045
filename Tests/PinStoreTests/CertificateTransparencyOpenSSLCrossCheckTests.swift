import COpenSSL
import CPinStoreShims
import Foundation
import PinStoreTesting
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The test kit's leaves checked by OpenSSL's own CT code (`SCT_LIST_validate` with a
/// `CTLOG_STORE` loaded from a log list file) and printed by the `openssl` command: the kit and
/// `EmbeddedSCTs` could share a mistake, OpenSSL is the independent judge.
@Suite("Embedded SCTs, cross-checked with OpenSSL")
struct CertificateTransparencyOpenSSLCrossCheckTests {
    @Test func openSSLValidatesP256AndRSALogSCTs() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)])
        let result = try OpenSSLCrossCheck.validate(leaf, issuer: ct.pki.intermediate, logs: [ct.p256Log, ct.rsaLog])
        #expect(result.allValid == 1)
        #expect(result.statuses == [SCT_VALIDATION_STATUS_VALID, SCT_VALIDATION_STATUS_VALID])
    }

    @Test func openSSLValidatesStaticCTAPILogSCTWithLeafIndex() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.staticLog, leafIndex: 42)])
        let result = try OpenSSLCrossCheck.validate(leaf, issuer: ct.pki.intermediate, logs: [ct.staticLog])
        #expect(result.statuses == [SCT_VALIDATION_STATUS_VALID])
    }

    @Test func openSSLFindsFlippedSignatureByteInvalid() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)], corruption: .flipSignatureByte(sctIndex: 1))
        let result = try OpenSSLCrossCheck.validate(leaf, issuer: ct.pki.intermediate, logs: [ct.p256Log, ct.rsaLog])
        #expect(result.allValid == 0)
        #expect(result.statuses == [SCT_VALIDATION_STATUS_VALID, SCT_VALIDATION_STATUS_INVALID])
    }

    @Test func openSSLFindsCopiedSCTListInvalid() throws {
        let ct = try CTFixture.get()
        let donor = try ct.leaf([TestSCT(log: ct.p256Log)])
        let leaf = try ct.leaf([], corruption: .sctListCopied(from: donor))
        let result = try OpenSSLCrossCheck.validate(leaf, issuer: ct.pki.intermediate, logs: [ct.p256Log])
        #expect(result.statuses == [SCT_VALIDATION_STATUS_INVALID])
    }

    @Test func openSSLFindsFutureTimestampInvalid() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log, timestamp: Date(timeIntervalSinceNow: 3_600))])
        let result = try OpenSSLCrossCheck.validate(leaf, issuer: ct.pki.intermediate, logs: [ct.p256Log])
        #expect(result.statuses == [SCT_VALIDATION_STATUS_INVALID])
    }

    @Test func openSSLCommandListsTheSCTsWithTheirLogIDs() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)])
        let text = try OpenSSLCrossCheck.openSSLText(leaf)
        #expect(text.contains("CT Precertificate SCTs"))
        // `openssl x509 -text` prints each log id as colon-separated hex over two lines.
        let squeezed = text.filter { !$0.isWhitespace }
        for log in [ct.p256Log, ct.rsaLog] {
            let hex = log.logID.map { String(format: "%02X", $0) }.joined(separator: ":")
            #expect(squeezed.contains("LogID:" + hex))
        }
    }
}

/// OpenSSL's CT API and command, called directly.
enum OpenSSLCrossCheck {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `SCT_LIST_validate`'s answer (1 all valid, 0 some not) and each SCT's status.
    static func validate(_ leaf: X509Certificate, issuer: X509Certificate, logs: [TestCTLog]) throws -> (allValid: Int32, statuses: [sct_validation_status_t]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ct-\(UUID().uuidString).cnf")
        try TestCTLog.openSSLLogListFile(logs).write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        guard let store = CTLOG_STORE_new() else { throw Failure(description: "CTLOG_STORE_new failed") }
        defer { CTLOG_STORE_free(store) }
        guard CTLOG_STORE_load_file(store, file.path) == 1 else { throw Failure(description: "CTLOG_STORE_load_file: \(OpenSSLErrorQueue.drain())") }
        let leafX509 = try x509(leaf)
        defer { X509_free(leafX509) }
        let issuerX509 = try x509(issuer)
        defer { X509_free(issuerX509) }
        guard let context = CT_POLICY_EVAL_CTX_new() else { throw Failure(description: "CT_POLICY_EVAL_CTX_new failed") }
        defer { CT_POLICY_EVAL_CTX_free(context) }
        guard CT_POLICY_EVAL_CTX_set1_cert(context, leafX509) == 1, CT_POLICY_EVAL_CTX_set1_issuer(context, issuerX509) == 1 else {
            throw Failure(description: "CT_POLICY_EVAL_CTX_set1_* failed")
        }
        CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(context, store)
        CT_POLICY_EVAL_CTX_set_time(context, UInt64(Date().timeIntervalSince1970 * 1_000))
        var critical: Int32 = 0
        guard let raw = X509_get_ext_d2i(leafX509, NID_ct_precert_scts, &critical, nil) else {
            throw Failure(description: "the leaf has no readable SCT list (crit \(critical))")
        }
        let list = OpaquePointer(raw)
        defer { CPinStoreShims_sk_SCT_pop_free(list) }
        let allValid = SCT_LIST_validate(list, context)
        OpenSSLErrorQueue.clear()
        let statuses = (0..<CPinStoreShims_sk_SCT_num(list)).map { SCT_get_validation_status(CPinStoreShims_sk_SCT_value(list, $0)) }
        return (allValid, statuses)
    }

    /// The raw TLS-encoded SCT list in `leaf` (the inner OCTET STRING's contents).
    static func sctListBytes(of leaf: X509Certificate) throws -> Data {
        let certificate = try x509(leaf)
        defer { X509_free(certificate) }
        let index = X509_get_ext_by_NID(certificate, NID_ct_precert_scts, -1)
        guard index >= 0, let found = X509_get_ext(certificate, index), let value = X509_EXTENSION_get_data(found) else {
            throw Failure(description: "no SCT list extension")
        }
        var cursor: UnsafePointer<UInt8>? = ASN1_STRING_get0_data(value)
        guard let inner = d2i_ASN1_OCTET_STRING(nil, &cursor, Int(ASN1_STRING_length(value))) else {
            throw Failure(description: "the extension value is not an OCTET STRING")
        }
        defer { ASN1_OCTET_STRING_free(inner) }
        return Data(bytes: ASN1_STRING_get0_data(inner), count: Int(ASN1_STRING_length(inner)))
    }

    /// `openssl x509 -text -noout` of `leaf`.
    static func openSSLText(_ leaf: X509Certificate) throws -> String {
        let result = try ChildProcess.runBlocking("/usr/bin/openssl", ["x509", "-inform", "DER", "-text", "-noout"], input: leaf.derRepresentation)
        guard result.status == 0 else { throw Failure(description: "openssl x509 exited with \(result.status): \(result.stderr)") }
        return result.stdout
    }

    private static func x509(_ certificate: X509Certificate) throws -> OpaquePointer {
        let parsed: OpaquePointer? = certificate.derRepresentation.withUnsafeBytes { raw in
            var cursor = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_X509(nil, &cursor, raw.count)
        }
        guard let parsed else { throw Failure(description: "d2i_X509 failed") }
        return parsed
    }
}
