import Foundation
import PinStore
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// `pinstore sign --revoke-key-from-host / --revoke-cert-from-host`: what a real TLS server on
/// 127.0.0.1 presents is revoked, what was revoked is printed for the operator to check, and a
/// store reading the list refuses it. The test kit's CA issues the server's leaf and a sibling;
/// the chain is verified against that CA (`--ca-file`) for `--server-name localhost`, as `--host`
/// verifies what it pins.
@Suite(.serialized) struct SignRevokeFromHostCommandTests {
    struct World {
        let pki: TestPKI
        let sibling: TestIdentity
        let server: TestHTTPSServer
        /// The test CA's root, DER, for `--ca-file`.
        let rootFile: URL

        static func start() async throws -> World {
            let pki = try TestPKI(hosts: ["localhost"])
            let rootFile = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-host-root-\(UUID().uuidString).der")
            try pki.root.derRepresentation.write(to: rootFile)
            return World(pki: pki, sibling: try pki.issueLeaf(for: ["localhost"]), server: try await TestHTTPSServer.start(presenting: pki.leaf),
                         rootFile: rootFile)
        }

        /// `option` against the server, verified for localhost under the test CA.
        func fromHost(_ option: String) -> [String] {
            [option, "127.0.0.1:\(server.port)", "--server-name", "localhost", "--ca-file", rootFile.path]
        }

        /// Signs a list pinning both leaves for localhost, with `extra` arguments.
        func sign(_ extra: [String]) async throws -> (list: URL, stderr: String) {
            let list = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-host-\(UUID().uuidString).json")
            var arguments = ["sign", "--key", SignRevocationCommandTests.key, "--out", list.path]
            for leaf in [pki.leaf.certificate, sibling.certificate] {
                arguments += ["--entry", "localhost,\(leaf.fingerprintBase64),4102444799"]
            }
            let result = try await PinstoreBinary.run(arguments + extra)
            try #require(result.status == 0, "\(result.stderr)")
            return (list, result.stderr)
        }

        func decision(_ store: PinStore, _ leaf: TestIdentity) -> PinningDecision {
            store.pinDecision(host: "localhost", validatedChain: leaf.chainDER + [pki.root.derRepresentation])
        }

        func shutdown() async {
            try? await server.shutdown()
            try? FileManager.default.removeItem(at: rootFile)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func theLeafAHostPresentsIsRevokedAndItsSiblingAllowed() async throws {
        let world = try await World.start()
        let (list, _) = try await world.sign(world.fromHost("--revoke-cert-from-host"))
        let store = try await SignRevocationCommandTests.store(reading: list)
        #expect(world.decision(store, world.pki.leaf).failure?.reason.listRevocation?.kind == .certificate)
        #expect(world.decision(store, world.sibling).isAllowed)
        let text = try String(contentsOf: list, encoding: .utf8)
        #expect(text.contains(#""kind":"issuerSerial""#))
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func whatWasRevokedFromAHostIsPrintedWithItsFingerprintAndSubject() async throws {
        let world = try await World.start()
        let stderr = try await world.sign(world.fromHost("--revoke-cert-from-host")).stderr
        #expect(stderr.contains(world.pki.leaf.certificate.fingerprintBase64), "\(stderr)")
        #expect(stderr.contains(world.pki.leaf.certificate.subject), "\(stderr)")
        #expect(stderr.contains("names: localhost"), "\(stderr)")
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aChainThatDoesNotVerifyIsNotRevokedWithoutInsecure() async throws {
        // Without --ca-file the system store does not trust the test CA: whoever sits on the
        // path could have chosen that chain, so nothing is revoked and no list is written.
        let world = try await World.start()
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-revoke-host-\(UUID().uuidString).json")
        let result = try await PinstoreBinary.run(["sign", "--key", SignRevocationCommandTests.key, "--out", list.path,
                                                   "--entry", "localhost,\(world.pki.leaf.certificate.fingerprintBase64),4102444799",
                                                   "--revoke-key-from-host", "127.0.0.1:\(world.server.port)", "--server-name", "localhost"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("does not verify") && result.stderr.contains("refusing to revoke"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: list.path))
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aChainForAnotherNameIsNotRevoked() async throws {
        let world = try await World.start()
        let result = try await PinstoreBinary.run(["sign", "--key", SignRevocationCommandTests.key,
                                                   "--entry", "localhost,\(world.pki.leaf.certificate.fingerprintBase64),4102444799",
                                                   "--revoke-cert-from-host", "127.0.0.1:\(world.server.port)", "--server-name", "other.example",
                                                   "--ca-file", world.rootFile.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("does not verify for other.example"), "\(result.stderr)")
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func insecureRevokesAnUnverifiedChainWithAWarning() async throws {
        let world = try await World.start()
        let (list, stderr) = try await world.sign(["--revoke-key-from-host", "127.0.0.1:\(world.server.port)", "--insecure"])
        let store = try await SignRevocationCommandTests.store(reading: list)
        #expect(world.decision(store, world.pki.leaf).failure?.reason.listRevocation?.kind == .key)
        #expect(stderr.contains("warning: revoking"), "\(stderr)")
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func theKeyAHostPresentsIsRevokedAndPrinted() async throws {
        let world = try await World.start()
        let (list, stderr) = try await world.sign(world.fromHost("--revoke-key-from-host"))
        let store = try await SignRevocationCommandTests.store(reading: list)
        #expect(world.decision(store, world.pki.leaf).failure?.reason.listRevocation?.kind == .key)
        #expect(world.decision(store, world.sibling).isAllowed)
        #expect(stderr.contains(world.pki.leaf.certificate.spkiSHA256Base64), "\(stderr)")
        await world.shutdown()
    }

    @Test func revokingFromAHostWithoutTheWholeListSignatureIsRefusedBeforeConnecting() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", SignRevocationCommandTests.key, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--no-list-signature", "--revoke-key-from-host", "127.0.0.1:1"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("need the whole-list signature"), "\(result.stderr)")
    }
}
