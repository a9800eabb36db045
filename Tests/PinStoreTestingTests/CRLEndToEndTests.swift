#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import PinStore
import PinStoreNIO
import PinStoreTesting
import Testing

/// CRLs through real TLS on 127.0.0.1: a test CA whose certificates name a CRL distribution
/// point on a loopback http server (``TestCRLServer``), CRLs signed through OpenSSL, and a store
/// checking them on the NIO verifier and the pinned URLSession.
@Suite(.serialized) struct CRLEndToEndTests {
    /// A CA publishing CRLs, a good leaf, a leaf its CA revoked, and a signed list pinning both.
    struct World {
        let crls: TestCRLServer
        let pki: TestPKI
        let good: TestIdentity
        let revoked: TestIdentity
        let key: TestListSigningKey
        let lists: TestListServer
        let folder: URL

        static func start() async throws -> World {
            let crls = try await TestCRLServer.start()
            let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
            let revoked = try pki.issueLeaf(for: ["localhost"])
            let key = try TestListSigningKey()
            let lists = try await TestListServer.start(serving: TestPinList(pinning: [pki.leaf.certificate, revoked.certificate]), signedWith: key)
            crls.serve(.crl(try pki.crl(by: .intermediate, revoking: [revoked.certificate])), at: "intermediate.crl")
            crls.serve(.crl(try pki.crl(by: .root)), at: "root.crl")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return World(crls: crls, pki: pki, good: pki.leaf, revoked: revoked, key: key, lists: lists, folder: folder)
        }

        /// A store whose every host is under `mode`, sharing ``folder`` with every other one made here.
        /// The budget is the longest allowed unless a test is about it: the budget holds now
        /// (its timer fires outside the cooperative pool), so on a loaded machine a CRL served at
        /// once can still reach the check after 2 s, and a handshake waits no longer than its CRL.
        func store(mode: CRLCheckMode, budget: TimeInterval = 30, maximumSize: Int = 8 << 20) async throws -> PinStore {
            var configuration = PinStore.Configuration(serviceURL: lists.listURL, publicKey: key.publicKeyBase64,
                                                       storageDirectory: folder, requestTimeout: 60)
            configuration.requireListSignature = true
            configuration.crlMode = mode
            configuration.crlFetchBudget = budget
            configuration.crlMaximumSize = maximumSize
            let store = try PinStore(configuration: configuration)
            #expect(await store.update() == .ok)
            return store
        }

        func shutdown() async {
            try? await crls.shutdown()
            try? await lists.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// One TLS handshake to `identity`, named `host`, through `PinningTLSVerifier`: the decision
    /// it was made with.
    static func handshake(to identity: TestIdentity, host: String = "localhost", store: PinStore, world: World) async throws -> PinningDecision? {
        let server = try await TestHTTPSServer.start(presenting: identity)
        defer { Task { try? await server.shutdown() } }
        let decision = Locked<PinningDecision?>(nil)
        let verifier = PinningTLSVerifier(store: store, trustRoots: world.pki.trustRoots, updateOnMismatch: false)
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try verifier.makeClientHandler(context: context, serverHostname: host,
                                                                                                 onDecision: { made in decision.withLock { $0 = made } }))
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: server.port).get()
        defer { channel.close(promise: nil) }
        let completed = (try? await done.futureResult.get()) != nil
        let made = decision.withLock { $0 }
        // The handshake's fate is the decision's: never allowed by one and failed by the other.
        #expect(completed == (made?.isAllowed ?? false))
        return made
    }

    final class HandshakeWatcher: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let done: EventLoopPromise<Void>
        init(done: EventLoopPromise<Void>) { self.done = done }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted? = event as? TLSUserEvent { done.succeed(()) }
            context.fireUserInboundEventTriggered(event)
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { done.fail(error) }
        func channelInactive(context: ChannelHandlerContext) { done.fail(ChannelError.ioOnClosedChannel) }
    }

    static func crlFailure(_ decision: PinningDecision?) -> CRLCheckFailure? {
        (decision?.failure ?? decision?.reportedFailure)?.reason.crlCheckFailure
    }

    @Test(.timeLimit(.minutes(10)))
    func aLeafRevokedByItsCAIsRefusedUnderSoftFailOnTheNIOVerifier() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .enforceSoftFail)
        let decision = try await Self.handshake(to: world.revoked, store: store, world: world)
        #expect(decision?.isAllowed == false)
        #expect(Self.crlFailure(decision)?.isRevoked == true)
        #expect(Self.crlFailure(decision)?.depth == 0)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func theSameCAsGoodLeafIsAllowedUnderSoftFail() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .enforceSoftFail)
        let decision = try await Self.handshake(to: world.good, store: store, world: world)
        guard case .allow? = decision else {
            Issue.record("expected an allowed handshake, got \(String(describing: decision))")
            return
        }
        #expect(world.crls.requestCount(for: "intermediate.crl") == 1)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedLeafIsAllowedAndReportedUnderReportOnly() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .reportOnly)
        let decision = try await Self.handshake(to: world.revoked, store: store, world: world)
        guard case .reportOnly(let failure, _)? = decision else {
            Issue.record("expected a reported handshake, got \(String(describing: decision))")
            return
        }
        #expect(failure.reason.crlCheckFailure?.isRevoked == true)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aLeafRevokedByItsCAIsRefusedOnThePinnedURLSession() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .enforceSoftFail)
        let server = try await TestHTTPSServer.start(presenting: world.revoked)
        defer { Task { try? await server.shutdown() } }
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = 600  // a hang guard, not a speed check: the servers are on loopback
        let session = URLSession(configuration: .pinned(by: store, trustRoots: world.pki.trustRoots, updateOnMismatch: false, basedOn: base))
        let error = await #expect(throws: URLError.self) { try await session.data(from: server.url(host: "localhost")) }
        #expect(error.flatMap { PinningFailure(unwrapping: $0) }?.reason.crlCheckFailure?.isRevoked == true)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedIntermediateRefusesEveryLeafBelowIt() async throws {
        let world = try await World.start()
        world.crls.serve(.crl(try world.pki.crl(by: .intermediate)), at: "intermediate.crl")
        world.crls.serve(.crl(try world.pki.crl(by: .root, revoking: [world.pki.intermediate])), at: "root.crl")
        let store = try await world.store(mode: .enforceSoftFail)
        for leaf in [world.good, world.revoked] {
            let decision = try await Self.handshake(to: leaf, store: store, world: world)
            #expect(decision?.isAllowed == false)
            #expect(Self.crlFailure(decision)?.isRevoked == true)
            #expect(Self.crlFailure(decision)?.depth == 1)
        }
        await world.shutdown()
    }

    /// A CRL that cannot be trusted, as the server serves it for the leaves.
    enum BadCRL: String, CaseIterable, Sendable {
        case badSignature, otherIssuer, expired, oversized

        var expectedCode: CRLUnavailable.Code {
            switch self {
            case .badSignature: .badSignature
            case .otherIssuer: .wrongIssuer
            case .expired: .expired
            case .oversized: .tooLarge
            }
        }

        func answer(_ world: World) throws -> TestCRLServer.Answer {
            switch self {
            case .badSignature:
                var der = try world.pki.crl(by: .intermediate, revoking: [world.revoked.certificate])
                // The last byte is inside the signature's integer s.
                der[der.count - 1] ^= 0x01
                return .crl(der)
            case .otherIssuer:
                return .crl(try world.pki.crl(by: .impostor))
            case .expired:
                return .crl(try world.pki.crl(by: .intermediate, thisUpdate: Date(timeIntervalSinceNow: -14 * 86_400),
                                              nextUpdate: Date(timeIntervalSinceNow: -7 * 86_400)))
            case .oversized:
                // A valid CRL, larger than the store reads (its limit is set to 64 bytes).
                return .crl(try world.pki.crl(by: .intermediate))
            }
        }
    }

    @Test(.timeLimit(.minutes(10)), arguments: BadCRL.allCases)
    func anUntrustworthyCRLIsUnavailableNeverNotRevoked(_ bad: BadCRL) async throws {
        let world = try await World.start()
        world.crls.serve(try bad.answer(world), at: "intermediate.crl")
        let store = try await world.store(mode: .enforceHardFail, maximumSize: bad == .oversized ? 64 : 8 << 20)
        let decision = try await Self.handshake(to: world.revoked, store: store, world: world)
        #expect(decision?.isAllowed == false)
        #expect(Self.crlFailure(decision)?.isRevoked == false)
        #expect(Self.crlFailure(decision)?.unavailable?.code == bad.expectedCode)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aDownCRLServerFailsOpenUnderSoftFailAndTheDecisionSaysRevocationStatusIsUnknown() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .enforceSoftFail)
        try await world.crls.shutdown()
        let decision = try await Self.handshake(to: world.revoked, store: store, world: world)
        guard case .reportOnly(let failure, _)? = decision else {
            Issue.record("expected a reported handshake, got \(String(describing: decision))")
            return
        }
        #expect(failure.reason.crlCheckFailure?.unavailable?.code == .fetchFailed)
        // Said as what happened, not as a pin failure in report-only mode.
        #expect(decision?.description.hasPrefix("allowed, revocation status unknown") == true, "\(String(describing: decision))")
        #expect(decision?.description.contains("pin check failed") == false, "\(String(describing: decision))")
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aDownCRLServerRefusesUnderHardFail() async throws {
        let world = try await World.start()
        let store = try await world.store(mode: .enforceHardFail)
        try await world.crls.shutdown()
        let decision = try await Self.handshake(to: world.good, store: store, world: world)
        #expect(decision?.isAllowed == false)
        #expect(Self.crlFailure(decision)?.unavailable?.code == .fetchFailed)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aHangingCRLServerHoldsTheHandshakeOnlyForTheBudgetThenFailsOpen() async throws {
        let world = try await World.start()
        world.crls.serve(.hang, at: "intermediate.crl")
        // The server answers after an hour; the test's time limit is the hang guard.
        let store = try await world.store(mode: .enforceSoftFail, budget: 0.5)
        let decision = try await Self.handshake(to: world.good, store: store, world: world)
        guard case .reportOnly(let failure, _)? = decision else {
            Issue.record("expected a reported handshake, got \(String(describing: decision))")
            return
        }
        #expect(failure.reason.crlCheckFailure?.unavailable?.code == .notFetchedYet)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aHangingCRLServerRefusesAfterTheBudgetUnderHardFail() async throws {
        let world = try await World.start()
        world.crls.serve(.hang, at: "intermediate.crl")
        let store = try await world.store(mode: .enforceHardFail, budget: 0.5)
        let decision = try await Self.handshake(to: world.good, store: store, world: world)
        #expect(decision?.isAllowed == false)
        #expect(Self.crlFailure(decision)?.unavailable?.code == .notFetchedYet)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func twoStoresSharingTheStorageFolderReuseOneDownload() async throws {
        let world = try await World.start()
        let first = try await world.store(mode: .enforceSoftFail)
        guard case .allow? = try await Self.handshake(to: world.good, store: first, world: world) else {
            Issue.record("the first store did not allow the good leaf")
            return
        }
        let second = try await world.store(mode: .enforceSoftFail)
        guard case .allow? = try await Self.handshake(to: world.good, store: second, world: world) else {
            Issue.record("the second store did not allow the good leaf")
            return
        }
        #expect(world.crls.requestCount(for: "intermediate.crl") == 1)
        await world.shutdown()
    }

    @Test(.timeLimit(.minutes(10)))
    func aStoredCRLOwnedByAnotherFileModeIsRefusedAndFetchedAgain() async throws {
        let world = try await World.start()
        let first = try await world.store(mode: .enforceSoftFail)
        _ = try await Self.handshake(to: world.good, store: first, world: world)
        // Someone else made the stored CRL writable for others: the next store does not read it.
        let stored = try FileManager.default.contentsOfDirectory(atPath: world.folder.path).filter { $0.hasPrefix("pinstore-crl-") }
        #expect(stored.count == 2)
        for name in stored {
            try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: world.folder.appendingPathComponent(name).path)
        }
        let second = try await world.store(mode: .enforceSoftFail)
        _ = try await Self.handshake(to: world.good, store: second, world: world)
        #expect(world.crls.requestCount(for: "intermediate.crl") == 2)
        await world.shutdown()
    }
}
#endif
