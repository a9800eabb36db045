#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO
import PinStoreTesting
import Testing

/// The signed list's `crl` section through real TLS on 127.0.0.1: the stores' own `crlMode` is
/// off, the list puts localhost under a CRL mode, and a list update changes it with no restart.
/// `b.example` is a second host of the same CA that the section does not name.
@Suite(.serialized) struct CRLSignedListEndToEndTests {
    struct Hosts {
        let world: CRLEndToEndTests.World
        /// A leaf for b.example that the CA revoked too.
        let revokedB: TestIdentity

        /// The world of ``CRLEndToEndTests``, with the CRL revoking both hosts' revoked leaves and
        /// a list that pins all three leaves and gives localhost `mode`.
        static func start(localhost mode: CRLCheckMode) async throws -> Hosts {
            let world = try await CRLEndToEndTests.World.start()
            let revokedB = try world.pki.issueLeaf(for: ["b.example"])
            world.crls.serve(.crl(try world.pki.crl(by: .intermediate, revoking: [world.revoked.certificate, revokedB.certificate])),
                             at: "intermediate.crl")
            let hosts = Hosts(world: world, revokedB: revokedB)
            try hosts.publish(localhost: mode)
            return hosts
        }

        func publish(localhost mode: CRLCheckMode) throws {
            var list = TestPinList(pinning: [world.pki.leaf.certificate, world.revoked.certificate, revokedB.certificate])
            list.crlModes = ["localhost": mode]
            try world.lists.publish(list)
        }

        /// A store whose own CRL mode is off: only the list's section puts a host under a check.
        func store() async throws -> PinStore {
            try await world.store(mode: .off)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostTheListPutsUnderSoftFailIsRefusedItsRevokedLeafOnTheNIOVerifier() async throws {
        let hosts = try await Hosts.start(localhost: .enforceSoftFail)
        let store = try await hosts.store()
        let decision = try await CRLEndToEndTests.handshake(to: hosts.world.revoked, store: store, world: hosts.world)
        #expect(decision?.isAllowed == false)
        #expect(CRLEndToEndTests.crlFailure(decision)?.isRevoked == true)
        await hosts.world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostTheListPutsUnderSoftFailIsRefusedItsRevokedLeafOnThePinnedURLSession() async throws {
        let hosts = try await Hosts.start(localhost: .enforceSoftFail)
        let store = try await hosts.store()
        let server = try await TestHTTPSServer.start(presenting: hosts.world.revoked)
        defer { Task { try? await server.shutdown() } }
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = 600  // a hang guard, not a speed check: the servers are on loopback
        let session = URLSession(configuration: .pinned(by: store, trustRoots: hosts.world.pki.trustRoots, updateOnMismatch: false, basedOn: base))
        let error = await #expect(throws: URLError.self) { try await session.data(from: server.url(host: "localhost")) }
        #expect(error.flatMap { PinningFailure(unwrapping: $0) }?.reason.crlCheckFailure?.isRevoked == true)
        await hosts.world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostTheListDoesNotNameKeepsTheStoresModeOffAndItsRevokedLeafIsAllowed() async throws {
        let hosts = try await Hosts.start(localhost: .enforceSoftFail)
        let store = try await hosts.store()
        let decision = try await CRLEndToEndTests.handshake(to: hosts.revokedB, host: "b.example", store: store, world: hosts.world)
        guard case .allow? = decision else {
            Issue.record("expected b.example's revoked leaf to be allowed (no CRL check), got \(String(describing: decision))")
            return
        }
        // Not looked at, not merely passed: b.example's check never fetched a CRL.
        #expect(hosts.world.crls.requestCount(for: "intermediate.crl") == 0)
        await hosts.world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aListUpdateMovingTheHostToReportOnlyAllowsAndReportsItsRevokedLeafWithNoRestart() async throws {
        let hosts = try await Hosts.start(localhost: .enforceSoftFail)
        let store = try await hosts.store()
        let before = try await CRLEndToEndTests.handshake(to: hosts.world.revoked, store: store, world: hosts.world)
        #expect(before?.isAllowed == false)
        try hosts.publish(localhost: .reportOnly)
        #expect(await store.update(mode: .forced) == .ok)
        let after = try await CRLEndToEndTests.handshake(to: hosts.world.revoked, store: store, world: hosts.world)
        guard case .reportOnly(let failure, _)? = after else {
            Issue.record("expected a reported handshake after the update, got \(String(describing: after))")
            return
        }
        #expect(failure.reason.crlCheckFailure?.isRevoked == true)
        await hosts.world.shutdown()
    }
}
#endif
