import Foundation
import PinStore
import PinStoreTesting
import Testing

/// The kit's test CT log through its public API only (the SCTs themselves are checked by
/// PinStore's CT tests and by OpenSSL's own validation there).
@Suite struct TestCTLogTests {
    @Test func logIDIsSHA256OfTheLogKey() throws {
        let log = try TestCTLog(keyType: .rsa2048)
        #expect(log.logID == SHA256Digest.hash(log.subjectPublicKeyInfo))
    }

    @Test func staticCTAPILogExtensionIsLeafIndexTypeLengthAndFortyBitIndex() throws {
        let log = try TestCTLog(kind: .staticCTAPI)
        #expect(log.sctExtensions(leafIndex: 0xFF_0000_0102) == Data([0x00, 0x00, 0x05, 0xFF, 0x00, 0x00, 0x01, 0x02]))
    }

    @Test func rfc6962LogAddsNoSCTExtensions() throws {
        let log = try TestCTLog(kind: .rfc6962)
        #expect(log.sctExtensions(leafIndex: 7).isEmpty)
    }

    @Test func leafWithEmbeddedSCTsChainsLikeAnyOtherLeaf() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let leaf = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: try TestCTLog())])
        let chain = try ChainValidator(trustRoots: pki.trustRoots).validate(chain: leaf.chainDER, hostname: "localhost")
        #expect(chain.first?.fingerprint == leaf.certificate.fingerprint)
    }

    @Test func corruptingAnSCTTheLeafDoesNotEmbedThrows() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        #expect(throws: PinStoreTestingError.self) {
            try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: try TestCTLog())], corruption: .flipSignatureByte(sctIndex: 1))
        }
    }

    @Test func openSSLLogListFileEnablesEveryLogWithItsBase64Key() throws {
        let logs = [try TestCTLog(), try TestCTLog(keyType: .rsa2048)]
        let text = TestCTLog.openSSLLogListFile(logs)
        #expect(text.hasPrefix("enabled_logs = log0,log1\n"))
        for log in logs { #expect(text.contains("key = \(log.subjectPublicKeyInfo.base64EncodedString())\n")) }
    }
}
