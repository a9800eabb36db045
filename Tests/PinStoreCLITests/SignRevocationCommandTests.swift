import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// `pinstore sign --revoke-key / --revoke-cert`: the list it writes is one a store accepts, and
/// the store then refuses what it revokes. The fixture PKI: `localhost` and `localhost-next`
/// are two leaves of the test intermediate CA, which the list pins by key.
@Suite struct SignRevocationCommandTests {
    static let key = TestResources.fixturePath("keys/list-signing.key.pem")

    /// Signs a list pinning the intermediate CA's key for localhost, with `extra` arguments;
    /// returns the list file.
    static func sign(_ extra: [String]) async throws -> URL {
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-\(UUID().uuidString).json")
        let result = try await PinstoreBinary.run(["sign", "--key", key, "--ca", TestResources.fixturePath("pki/intermediate-ca.pem"),
                                                   "--name", "localhost", "--out", list.path] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return list
    }

    /// A store reading `list` as its `file:` service URL, updated once.
    static func store(reading list: URL) async throws -> PinStore {
        var configuration = PinStore.Configuration(
            serviceURL: list,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-store-\(UUID().uuidString)"))
        configuration.requireListSignature = true
        let store = try PinStore(configuration: configuration)
        #expect(await store.update() == .ok)
        return store
    }

    static func decision(_ store: PinStore, _ chain: String) throws -> PinningDecision {
        store.pinDecision(host: "localhost", validatedChain: try TestResources.chainDER("pki/\(chain)-chain.pem"))
    }

    @Test func aRevokedCertificateFileIsRefusedByTheStoreAndItsSiblingAllowed() async throws {
        let list = try await Self.sign(["--revoke-cert", TestResources.fixturePath("pki/localhost-chain.pem")])
        let store = try await Self.store(reading: list)
        #expect(try Self.decision(store, "localhost").failure?.reason.listRevocation?.kind == .certificate)
        #expect(try Self.decision(store, "localhost-next").isAllowed)
    }

    @Test func aChainFileAlsoRevokesTheIssuerKeyAndSerial() async throws {
        let list = try await Self.sign(["--revoke-cert", TestResources.fixturePath("pki/localhost-chain.pem")])
        let text = try String(contentsOf: list, encoding: .utf8)
        #expect(text.contains(#""kind":"certificate""#))
        #expect(text.contains(#""kind":"issuerSerial""#))
        #expect(text.contains(#""serial":"39263E9BA649114E61CD385EEBEAE713AA53B4""#))   // openssl x509 -serial of pki/localhost.pem
        #expect(text.contains(#""leaf":true"#))
    }

    @Test func aRevokedCAKeyGivenAsADigestRefusesEveryLeafBelowIt() async throws {
        let digest = SHA256Digest.hash(try TestResources.certificate("pki/intermediate-ca.pem").subjectPublicKeyInfo).base64EncodedString()
        let store = try await Self.store(reading: try await Self.sign(["--revoke-key", digest]))
        for chain in ["localhost", "localhost-next"] {
            let match = try Self.decision(store, chain).failure?.reason.listRevocation
            #expect(match?.kind == .key)
            #expect(match?.depth == 1)
        }
    }

    @Test func aRevokedKeyFromACertificateFileRefusesThatLeafOnly() async throws {
        let store = try await Self.store(reading: try await Self.sign(["--revoke-key", TestResources.fixturePath("pki/localhost-next.pem")]))
        #expect(try Self.decision(store, "localhost-next").failure?.reason.listRevocation?.kind == .key)
        #expect(try Self.decision(store, "localhost").isAllowed)
    }

    /// A certificate's SHA-256 changes when its signature is re-encoded (ECDSA's s and n - s both
    /// verify); its issuer key and serial number do not. So the issuer is required.
    @Test func aRevokedCertificateWithoutItsIssuerIsRefused() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.key, "--ca", TestResources.fixturePath("pki/intermediate-ca.pem"),
                                                   "--name", "localhost", "--revoke-cert", TestResources.fixturePath("pki/localhost.pem")])
        #expect(result.status != 0)
        #expect(result.stderr.contains("give it followed by its issuer"), "\(result.stderr)")
    }

    @Test func aRevokedCertificateFollowedByACertificateThatDidNotIssueItIsRefused() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-mispaired-\(UUID().uuidString).pem")
        try (try TestResources.fixtureText("pki/localhost.pem") + TestResources.fixtureText("pki/attacker.pem")).write(to: file, atomically: true, encoding: .utf8)
        let result = try await PinstoreBinary.run(["sign", "--key", Self.key, "--ca", TestResources.fixturePath("pki/intermediate-ca.pem"),
                                                   "--name", "localhost", "--revoke-cert", file.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("the second certificate did not issue the first"), "\(result.stderr)")
    }

    @Test func revocationsWithoutTheWholeListSignatureAreRefusedBeforeSigning() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.key, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--no-list-signature", "--revoke-cert", TestResources.fixturePath("pki/localhost.pem")])
        #expect(result.status != 0)
        #expect(result.stderr.contains("need the whole-list signature: stores refuse a revocations section"), "\(result.stderr)")
    }

    @Test func aRevocationThatIsNeitherAFileNorADigestIsRefused() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.key, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--revoke-key", "not-a-digest"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("neither a certificate file nor the Base64"))
    }
}
