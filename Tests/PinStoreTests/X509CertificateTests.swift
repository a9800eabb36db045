import Foundation
import PinStoreTestSupport
import Testing
import CPinStoreTestSupport
@testable import PinStore

@Suite struct X509CertificateTests {
    @Test func pemLeafExposesNamesIssuerAndDates() throws {
        let leaf = try TestResources.certificate("pki/localhost.pem")
        #expect(leaf.commonName == "localhost")
        #expect(leaf.dnsNames == ["localhost"])
        #expect(leaf.ipAddresses == ["127.0.0.1"])
        #expect(leaf.issuer.contains("CN=PinStore Test Intermediate CA"))
        #expect(leaf.subject.contains("CN=localhost"))
        // make-fixtures.sh: valid certificates run 2025-01-01T00:00:00Z ... 2099-12-31T23:59:59Z.
        #expect(leaf.notBefore == Date(timeIntervalSince1970: 1_735_689_600))
        #expect(leaf.notAfter == Date(timeIntervalSince1970: 4_102_444_799))
    }

    @Test func derAndPEMOfTheSameCertificateAreEqual() throws {
        let pem = try TestResources.certificate("pki/localhost.pem")
        let der = try X509Certificate(derRepresentation: TestResources.fixture("pki/localhost.der"))
        #expect(pem == der)
        #expect(try X509Certificate.certificates(fileContents: TestResources.fixture("pki/localhost.der")) == [pem])
    }

    @Test func fingerprintIsSHA256OfTheDER() throws {
        let leaf = try TestResources.certificate("pki/localhost.pem")
        #expect(leaf.fingerprint == SHA256Digest.hash(leaf.derRepresentation))
        #expect(leaf.fingerprintBase64 == leaf.fingerprint.base64EncodedString())
        #expect(leaf.fingerprintHex.count == 64)
    }

    @Test func spkiIsTheDERSubjectPublicKeyInfoOfTheLeafKey() throws {
        let leaf = try TestResources.certificate("pki/localhost.pem")
        let key = try P256PublicKey(derSubjectPublicKeyInfo: leaf.subjectPublicKeyInfo)
        #expect(key.derRepresentation == leaf.subjectPublicKeyInfo)
    }

    @Test func rsaLeafParsesWithItsRSAKey() throws {
        let leaf = try TestResources.certificate("pki/api-rsa.pem")
        #expect(leaf.commonName == "api.pinstore.test")
        #expect(throws: PinStoreError(.publicKeyNotEllipticCurve, "")) {
            try P256PublicKey(derSubjectPublicKeyInfo: leaf.subjectPublicKeyInfo)
        }
    }

    @Test func bundleYieldsEveryCertificateInOrder() throws {
        let all = try X509Certificate.certificates(pem: TestResources.fixtureText("pki/bundle.pem"))
        #expect(all.map(\.commonName) == ["PinStore Test Root CA", "PinStore Test Intermediate CA", "localhost"])
    }

    @Test func explanatoryTextBetweenBlocksIsIgnored() throws {
        let clean = try X509Certificate.certificates(pem: TestResources.fixtureText("pki/bundle.pem"))
        let withJunk = try X509Certificate.certificates(pem: TestResources.fixtureText("pki/bundle-with-junk.pem"))
        #expect(withJunk == clean)
    }
}

// Serialized: the 10 MB test and the leak test measure and move memory; run one at a time.
@Suite(.serialized) struct GarbageInputTests {
    @Test func emptyInputIsNoCertificate() {
        #expect(throws: PinStoreError(.noCertificate, "")) { try X509Certificate(derRepresentation: Data()) }
        #expect(throws: PinStoreError(.noCertificate, "")) { try X509Certificate.certificates(fileContents: Data()) }
        #expect(throws: PinStoreError(.noCertificate, "")) { try X509Certificate.certificates(pem: "") }
    }

    @Test func randomBytesAreMalformed() {
        var generator = SystemRandomNumberGenerator()
        for length in [1, 2, 100, 1_500, 65_536] {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate(derRepresentation: bytes) }
        }
    }

    @Test func everyTruncationOfADERCertificateIsMalformed() throws {
        let der = try TestResources.fixture("pki/localhost.der")
        for length in 1..<der.count {
            #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate(derRepresentation: der.prefix(length)) }
        }
    }

    @Test func trailingBytesAfterADERCertificateAreMalformed() throws {
        let der = try TestResources.fixture("pki/localhost.der")
        #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate(derRepresentation: der + Data([0])) }
    }

    @Test func truncatedPEMIsInvalidPEM() throws {
        let pem = try TestResources.fixtureText("pki/localhost.pem")
        let cut = String(pem.prefix(pem.count / 2))
        #expect(throws: PinStoreError(.invalidPEM, "")) { try X509Certificate.certificates(pem: cut) }
    }

    @Test func pemBlockWithCorruptBase64IsInvalidPEM() throws {
        var lines = try TestResources.fixtureText("pki/localhost.pem").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[2] = "!!!!" + lines[2].dropFirst(4)
        #expect(throws: PinStoreError(.invalidPEM, "")) { try X509Certificate.certificates(pem: lines.joined(separator: "\n")) }
    }

    @Test func pemWhoseBase64IsNotACertificateIsMalformed() {
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data("hello, world".utf8).base64EncodedString() + "\n-----END CERTIFICATE-----\n"
        #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate.certificates(pem: pem) }
    }

    @Test func tenMegabyteBlobIsRefusedWithoutCrashing() {
        var blob = Data(repeating: 0x41, count: 10 * 1024 * 1024)
        blob[0] = 0x30 // looks like the start of a DER SEQUENCE
        blob[1] = 0x84
        #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate(derRepresentation: blob) }
        #expect(throws: PinStoreError.self) { try X509Certificate.certificates(fileContents: blob) }
        let textBlob = "-----BEGIN CERTIFICATE-----\n" + String(repeating: "QUFB\n", count: 2_000_000) + "-----END CERTIFICATE-----\n"
        #expect(throws: PinStoreError(.certificateMalformed, "")) { try X509Certificate.certificates(pem: textBlob) }
    }

    @Test(.enabled(if: CPinStoreTestSupport_heapInUse() > 0, "malloc statistics are available on glibc only"))
    func repeatedParsingDoesNotLeak() throws {
        // Every parse, good or failed, frees what OpenSSL allocated: the heap in use stays flat
        // over 20,000 parses. (Leaking one X509 per parse would hold well over 20 MB.)
        let der = try TestResources.fixture("pki/localhost.der")
        func heapInUse() -> Int { Int(CPinStoreTestSupport_heapInUse()) }
        for _ in 0..<2_000 { _ = try? X509Certificate(derRepresentation: der) }
        let before = heapInUse()
        for _ in 0..<10_000 {
            _ = try? X509Certificate(derRepresentation: der.prefix(der.count - 1))
            _ = try? X509Certificate(derRepresentation: der)
        }
        let grown = heapInUse() - before
        #expect(grown < 8 * 1024 * 1024, "heap in use grew by \(grown) bytes over 20,000 parses")
    }
}
