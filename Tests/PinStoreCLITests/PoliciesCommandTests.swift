import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// `pinstore policies FILE`: what an Info.plist or an Android config pins.
@Suite struct PoliciesCommandTests {
    static func spki(_ certificate: String) throws -> String { try TestResources.certificate("pki/\(certificate).pem").spkiSHA256Base64 }

    @Test func showsEachDomainOfAnInfoPlistWithItsPinKinds() async throws {
        let result = try await PinstoreBinary.run(["policies", TestResources.fixturePath("policies/Info.plist")])
        #expect(result.status == 0, "\(result.stderr)")
        // NSIncludesSubdomains: the domain and one label below it, as ATS means it.
        #expect(result.stdout.contains("\npinstore.test\n"))
        #expect(result.stdout.contains("*.pinstore.test (exactly one label below pinstore.test)"))
        #expect(result.stdout.contains("sha256/\(try Self.spki("intermediate-ca")) (CA key)"))
        #expect(result.stdout.contains("sha256/\(try Self.spki("localhost")) (leaf key)"))
        #expect(result.stdout.contains("a leaf pin AND a CA pin"))
    }

    @Test func showsTheExpirationOfAnAndroidPinSet() async throws {
        let result = try await PinstoreBinary.run(["policies", TestResources.fixturePath("policies/network_security_config.xml")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("expires 2099-01-01T00:00:00Z"))
        #expect(result.stdout.contains("api.pinstore.test"))
    }

    @Test func aMalformedFileFailsNamingTheLine() async throws {
        let result = try await PinstoreBinary.run(["policies", TestResources.fixturePath("policies/network_security_config-sha1.xml")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 14"))
    }

    @Test func aDomainWithoutABackupPinIsShownAsRefused() async throws {
        let directory = try TestResources.temporaryDirectory()
        let file = directory.appendingPathComponent("network_security_config.xml")
        let xml = #"<network-security-config><domain-config><domain>api.example.com</domain><pin-set><pin digest="SHA-256">\#(try Self.spki("localhost"))</pin></pin-set></domain-config></network-security-config>"#
        try Data(xml.utf8).write(to: file)
        let result = try await PinstoreBinary.run(["policies", file.path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("REFUSED"))
        #expect(result.stdout.contains("backup pin"))
    }
}

/// `pinstore sign --spki/--ca` and `pinstore fingerprint --spki/--ca`.
@Suite struct KeyPinCommandTests {
    static let keyPath = TestResources.fixturePath("keys/list-signing.key.pem")

    @Test func signSpkiWritesALeafKeyPinUnderAWholeListSignature() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--spki", "--cert", TestResources.fixturePath("pki/localhost.pem")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"fingerprint\": \"\(try PoliciesCommandTests.spki("localhost"))\""))
        #expect(result.stdout.contains("\"pin\": \"spki\""))
        #expect(result.stdout.contains("\"listSignature\""))
    }

    @Test func signCaWritesACAKeyPinForTheName() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--ca", TestResources.fixturePath("pki/intermediate-ca.pem"),
                                                   "--name", "api.pinstore.test"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"name\": \"api.pinstore.test\", \"fingerprint\": \"\(try PoliciesCommandTests.spki("intermediate-ca"))\""))
        #expect(result.stdout.contains("\"pin\": \"ca-spki\""))
    }

    @Test func keyPinsWithoutAWholeListSignatureAreRefused() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--spki", "--no-list-signature",
                                                   "--cert", TestResources.fixturePath("pki/localhost.pem")])
        #expect(result.status != 0)
        #expect(result.stderr.contains("whole-list signature"))
    }

    @Test func fingerprintSpkiCaPrintsTheCAIdentitiesOnly() async throws {
        let result = try await PinstoreBinary.run(["fingerprint", TestResources.fixturePath("pki/localhost-chain.pem"), "--spki", "--ca"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "sha256/\(try PoliciesCommandTests.spki("intermediate-ca")) CN=PinStore Test Intermediate CA\n")
    }
}
