import Foundation
import PinStore
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// `pinstore sign --revoke-key-from-host / --revoke-cert-from-host`: what a real TLS server on
/// 127.0.0.1 presents is revoked, what was revoked is printed for the operator to check, and a
/// store reading the list refuses it. The test kit's CA issues the server's leaf and a sibling.
@Suite(.serialized) struct SignRevokeFromHostCommandTests {
    struct World {
        let pki: TestPKI
        let sibling: TestIdentity
        let server: TestHTTPSServer

        static func start() async throws -> World {
            let pki = try TestPKI(hosts: ["localhost"])
            return World(pki: pki, sibling: try pki.issueLeaf(for: ["localhost"]), server: try await TestHTTPSServer.start(presenting: pki.leaf))
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

        func shutdown() async { try? await server.shutdown() }
    }

    @Test(.timeLimit(.minutes(1)))
    func theLeafAHostPresentsIsRevokedAndItsSiblingAllowed() async throws {
        let world = try await World.start()
        let (list, _) = try await world.sign(["--revoke-cert-from-host", "127.0.0.1:\(world.server.port)"])
        let store = try await SignRevocationCommandTests.store(reading: list)
        #expect(world.decision(store, world.pki.leaf).failure?.reason.listRevocation?.kind == .certificate)
        #expect(world.decision(store, world.sibling).isAllowed)
        let text = try String(contentsOf: list, encoding: .utf8)
        #expect(text.contains(#""kind":"issuerSerial""#))
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func whatWasRevokedFromAHostIsPrintedWithItsFingerprintAndSubject() async throws {
        let world = try await World.start()
        let stderr = try await world.sign(["--revoke-cert-from-host", "127.0.0.1:\(world.server.port)"]).stderr
        #expect(stderr.contains(world.pki.leaf.certificate.fingerprintBase64), "\(stderr)")
        #expect(stderr.contains(world.pki.leaf.certificate.subject), "\(stderr)")
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func theKeyAHostPresentsIsRevokedAndPrinted() async throws {
        let world = try await World.start()
        let (list, stderr) = try await world.sign(["--revoke-key-from-host", "127.0.0.1:\(world.server.port)"])
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
