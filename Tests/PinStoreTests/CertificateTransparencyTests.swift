import Foundation
import PinStoreTestSupport
import PinStoreTesting
import Testing
@testable import PinStore

/// `EmbeddedSCTs.check`: one verdict per embedded SCT, typed errors for lists that cannot be read.
@Suite("Embedded SCTs")
struct EmbeddedSCTsTests {
    @Test func compliantLeafWithP256AndRSALogSCTsVerifiesBoth() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)])
        let checks = try ct.check(leaf).checks
        #expect(checks.map(\.status) == [.verified, .verified])
        #expect(checks.map(\.sct.logID) == [ct.p256Log.logID, ct.rsaLog.logID])
        #expect(checks.map(\.sct.signatureAlgorithm) == [3, 1])
    }

    @Test func staticCTAPILogSCTWithLeafIndexVerifies() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.staticLog, leafIndex: 0x01_2345_6789)])
        let checks = try ct.check(leaf).checks
        #expect(checks.map(\.status) == [.verified])
        // leaf_index(0), length 5, the 40-bit index: signed like any extension bytes.
        #expect(checks.first?.sct.extensions == Data([0x00, 0x00, 0x05, 0x01, 0x23, 0x45, 0x67, 0x89]))
    }

    @Test func flippedSignatureByteIsInvalidSignatureForThatSCTOnly() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)], corruption: .flipSignatureByte(sctIndex: 0))
        #expect(try ct.statuses(leaf) == [.invalidSignature, .verified])
    }

    @Test func sctFromUnknownLogIsUnknownLog() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.unknownLog), TestSCT(log: ct.p256Log)])
        #expect(try ct.statuses(leaf) == [.unknownLog, .verified])
    }

    @Test func sctWithTimestampAfterNowIsFutureTimestamp() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log, timestamp: Date(timeIntervalSinceNow: 3_600))])
        #expect(try ct.statuses(leaf) == [.futureTimestamp])
    }

    @Test func sctListCopiedFromAnotherCertificateIsInvalidSignature() throws {
        let ct = try CTFixture.get()
        let donor = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)])
        let leaf = try ct.leaf([], corruption: .sctListCopied(from: donor))
        #expect(try ct.statuses(leaf) == [.invalidSignature, .invalidSignature])
    }

    @Test func sctsCheckedAgainstWrongIssuerAreInvalidSignature() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog)])
        #expect(try ct.statuses(leaf, issuer: ct.pki.impostorRoot.derRepresentation) == [.invalidSignature, .invalidSignature])
    }

    @Test func sctWhoseAlgorithmTheLogKeyCannotMakeIsUnsupportedAlgorithm() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.rsaLog)])
        // The RSA log's id answered with a P-256 key: the SCT names RSA, the key is ECDSA.
        let p256Key = try CTLogKey(spki: ct.p256Log.subjectPublicKeyInfo)
        let evidence = try EmbeddedSCTs.check(leaf: leaf.derRepresentation, issuer: ct.issuer,
                                              logKey: { _ in p256Key }, nowMilliseconds: CTFixture.nowMilliseconds)
        #expect(evidence.checks.map(\.status) == [.unsupportedAlgorithm])
    }

    @Test func sctOfAnotherVersionIsUnsupportedVersion() throws {
        let ct = try CTFixture.get()
        // extnValue: OCTET STRING { list length 4, SCT length 2, version 1 (v2), one byte }.
        // OpenSSL keeps SCTs of versions other than v1 opaque.
        let value = Data([0x04, 0x06, 0x00, 0x04, 0x00, 0x02, 0x01, 0x00])
        let leaf = try ct.leaf([], corruption: .rawExtensionValue(value))
        let checks = try ct.check(leaf).checks
        #expect(checks.map(\.status) == [.unsupportedVersion])
        #expect(checks.first?.sct.version == 1)
    }

    @Test func duplicatedSCTExtensionThrowsDuplicatedSCTExtension() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log)], corruption: .duplicatedExtension)
        #expect(throws: CertificateTransparencyError.duplicatedSCTExtension) { try ct.check(leaf) }
    }

    @Test func sctListShorterThanItsLengthPrefixThrowsTruncated() throws {
        let ct = try CTFixture.get()
        // The list says 0x30 bytes follow; two do.
        let leaf = try ct.leaf([], corruption: .rawExtensionValue(Data([0x04, 0x04, 0x00, 0x30, 0x00, 0x2E])))
        #expect(throws: CertificateTransparencyError.truncatedSCTList) { try ct.check(leaf) }
    }

    @Test func extensionValueCutInsideItsDERHeaderThrowsTruncated() throws {
        let ct = try CTFixture.get()
        // An OCTET STRING announcing 0x40 bytes, holding two.
        let leaf = try ct.leaf([], corruption: .rawExtensionValue(Data([0x04, 0x40, 0x00, 0x30])))
        #expect(throws: CertificateTransparencyError.truncatedSCTList) { try ct.check(leaf) }
    }

    @Test func extensionValueThatIsNotAnOctetStringThrowsMalformed() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([], corruption: .rawExtensionValue(Data([0x30, 0x03, 0x02, 0x01, 0x05])))
        #expect(throws: CertificateTransparencyError.malformedSCTList) { try ct.check(leaf) }
    }

    @Test func sctListWithInconsistentInnerLengthThrowsMalformed() throws {
        let ct = try CTFixture.get()
        // The list length (4) is right, but the one SCT inside claims 9 bytes.
        let leaf = try ct.leaf([], corruption: .rawExtensionValue(Data([0x04, 0x06, 0x00, 0x04, 0x00, 0x09, 0x00, 0x00])))
        #expect(throws: CertificateTransparencyError.malformedSCTList) { try ct.check(leaf) }
    }

    @Test func leafWithoutSCTListHasNoChecks() throws {
        let ct = try CTFixture.get()
        let evidence = try ct.check(ct.pki.leaf.certificate)
        #expect(evidence.checks.isEmpty)
    }

    @Test func evidenceCarriesLeafValidityInUnixSeconds() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log)])
        let evidence = try ct.check(leaf)
        #expect(evidence.leafNotBefore == Int64(leaf.notBefore.timeIntervalSince1970))
        #expect(evidence.leafNotAfter == Int64(leaf.notAfter.timeIntervalSince1970))
        #expect(evidence.leafNotAfter - evidence.leafNotBefore == 30 * 86_400)
    }

    @Test func leafWithMoreThanSixtyFourSCTsThrowsTooManySCTs() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf(Array(repeating: TestSCT(log: ct.p256Log), count: EmbeddedSCTs.maximumSCTs + 1))
        #expect(throws: CertificateTransparencyError.tooManySCTs(count: 65)) { try ct.check(leaf) }
    }

    @Test func unreadableLeafThrowsLeafUnreadable() throws {
        let ct = try CTFixture.get()
        #expect(throws: CertificateTransparencyError.leafUnreadable) {
            try EmbeddedSCTs.check(leaf: Data([0x30, 0x03, 0x01]), issuer: ct.issuer, logKey: { ct.keys[$0] }, nowMilliseconds: 0)
        }
    }

    @Test func unreadableIssuerThrowsIssuerUnreadable() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log)])
        #expect(throws: CertificateTransparencyError.issuerUnreadable) {
            try EmbeddedSCTs.check(leaf: leaf.derRepresentation, issuer: Data("not a certificate".utf8), logKey: { ct.keys[$0] }, nowMilliseconds: 0)
        }
    }
}

/// `EmbeddedSCTs.parseList`: the raw TLS-encoded list the fuzz target feeds.
@Suite("SCT list parsing")
struct SCTListParsingTests {
    @Test func emptyBytesAreTruncated() {
        #expect(throws: CertificateTransparencyError.truncatedSCTList) { try EmbeddedSCTs.parseList(Data()) }
    }

    @Test func listLongerThanItsBytesIsTruncated() {
        #expect(throws: CertificateTransparencyError.truncatedSCTList) { try EmbeddedSCTs.parseList(Data([0x00, 0x10, 0x00])) }
    }

    @Test func listWithTrailingBytesIsMalformed() {
        #expect(throws: CertificateTransparencyError.malformedSCTList) { try EmbeddedSCTs.parseList(Data([0x00, 0x00, 0xFF])) }
    }

    @Test func v1SCTWithUnknownAlgorithmPairIsMalformed() {
        // One v1 SCT: log id (32 zero bytes), timestamp 1, no extensions, hash 5 (SHA-384) with
        // ECDSA, a 1-byte signature. OpenSSL refuses pairs other than SHA-256 with RSA or ECDSA.
        var sct = Data([0x00]) + Data(count: 32) + Data([0, 0, 0, 0, 0, 0, 0, 1]) + Data([0x00, 0x00])
        sct += Data([0x05, 0x03, 0x00, 0x01, 0xAA])
        let list = Data([0x00, UInt8(sct.count + 2), 0x00, UInt8(sct.count)]) + sct
        #expect(throws: CertificateTransparencyError.malformedSCTList) { try EmbeddedSCTs.parseList(list) }
    }

    @Test func listFromGeneratedLeafParsesToItsSCTs() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log), TestSCT(log: ct.rsaLog), TestSCT(log: ct.staticLog, leafIndex: 7)])
        let list = try OpenSSLCrossCheck.sctListBytes(of: leaf)
        let scts = try EmbeddedSCTs.parseList(list)
        #expect(scts.map(\.logID) == [ct.p256Log.logID, ct.rsaLog.logID, ct.staticLog.logID])
        #expect(scts.map(\.extensions.count) == [0, 0, 8])
        // Fuzz/make-corpus.sh sets this to collect the list as the sct-list target's seed.
        if let directory = ProcessInfo.processInfo.environment["PINSTORE_CT_SEED_DIRECTORY"] {
            try list.write(to: URL(fileURLWithPath: directory).appendingPathComponent("three-logs.sctlist"))
        }
    }
}

/// `CTLogKey`: the one parsed key per log.
@Suite("CT log keys")
struct CTLogKeyTests {
    @Test func p256LogKeyIdIsSHA256OfItsSPKI() throws {
        let log = try TestCTLog(keyType: .p256)
        let key = try CTLogKey(spki: log.subjectPublicKeyInfo)
        #expect(key.id.data == SHA256Digest.hash(log.subjectPublicKeyInfo))
        #expect(key.algorithm == .ecdsaP256)
    }

    @Test func rsa2048LogKeyIsAccepted() throws {
        let key = try CTLogKey(spki: try TestResources.fixture("keys/rsa-2048.pub.pem").derOfPEMPublicKey())
        #expect(key.algorithm == .rsa)
    }

    @Test func p384KeyIsRefusedAsUnsupported() throws {
        #expect(throws: PinStoreError(.ctLogKeyUnsupported, "")) {
            try CTLogKey(spki: try TestResources.fixture("keys/secp384r1.pub.der"))
        }
    }

    @Test func spkiWithTrailingByteIsMalformed() throws {
        let log = try TestCTLog(keyType: .p256)
        #expect(throws: PinStoreError(.publicKeyMalformed, "")) { try CTLogKey(spki: log.subjectPublicKeyInfo + Data([0x00])) }
    }

    @Test func verifyRefusesSignatureOverOtherMessage() throws {
        let ct = try CTFixture.get()
        let leaf = try ct.leaf([TestSCT(log: ct.p256Log)])
        let sct = try #require(try EmbeddedSCTs.parseList(try OpenSSLCrossCheck.sctListBytes(of: leaf)).first)
        let key = try CTLogKey(spki: ct.p256Log.subjectPublicKeyInfo)
        #expect(!key.verify(signature: sct.signature, over: Data("another message".utf8)))
        #expect(!key.verify(signature: Data(), over: Data()))
    }
}

extension Data {
    /// The DER of the first PEM `PUBLIC KEY` block in these bytes (through PinStore's OpenSSL reader).
    func derOfPEMPublicKey() throws -> Data {
        try #require(PEMDocument.firstBlock(in: String(decoding: self, as: UTF8.self), label: "PUBLIC KEY"))
    }
}
