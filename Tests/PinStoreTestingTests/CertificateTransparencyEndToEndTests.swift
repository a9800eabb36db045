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

/// Certificate Transparency through real TLS on 127.0.0.1: leaves with SCTs from test logs
/// made through OpenSSL, a list server whose signed list names the logs, and a store checking
/// them on the NIO verifier and the pinned URLSession. The test CA counts as public here
/// (`certificateTransparencyForPrivateAnchors`), as the issue's tests need.
@Suite(.serialized) struct CertificateTransparencyEndToEndTests {
    /// Two logs of two operators, and leaves that do and do not comply.
    struct World {
        let pki: TestPKI
        let logs: [TestCTLog]
        let compliant: TestIdentity
        let oneSCT: TestIdentity
        let key: TestListSigningKey

        init() throws {
            pki = try TestPKI(hosts: ["localhost"])
            logs = [try TestCTLog(keyType: .p256), try TestCTLog(keyType: .rsa2048)]
            compliant = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logs[0]), TestSCT(log: logs[1])])
            oneSCT = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logs[0])])
            key = try TestListSigningKey()
        }

        /// A list pinning both leaves, naming both logs, with `mode` for localhost.
        func list(mode: CertificateTransparencyMode?, logListAge: TimeInterval = 86_400) -> TestPinList {
            var list = TestPinList(pinning: [compliant.certificate, oneSCT.certificate])
            if let mode {
                list.certificateTransparency = TestCTLogList(
                    logs: [.init(logs[0], operatorName: "Operator A"), .init(logs[1], operatorName: "Operator B")],
                    hosts: ["localhost": mode], timestamp: Date(timeIntervalSinceNow: -logListAge))
            }
            return list
        }

        func store(listURL: URL) throws -> PinStore {
            var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: key.publicKeyBase64,
                                                       storageDirectory: FileManager.default.temporaryDirectory
                                                           .appendingPathComponent("pinstore-ct-e2e-\(UUID().uuidString)"),
                                                       requestTimeout: 60)
            configuration.requireListSignature = true
            configuration.certificateTransparencyForPrivateAnchors = true
            return try PinStore(configuration: configuration)
        }
    }

    static func session(_ store: PinStore, _ world: World) -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = 600  // a hang guard, not a speed check: the servers are on loopback
        return URLSession(configuration: .pinned(by: store, trustRoots: world.pki.trustRoots, updateOnMismatch: false, basedOn: base))
    }

    /// The CT refusal behind a failed request, if that is what failed it.
    static func ctViolation(_ error: any Error) -> CertificateTransparencyViolation? {
        guard let violation = PinningFailure(unwrapping: error)?.reason.certificateTransparencyViolation else { return nil }
        return violation
    }

    /// One TLS handshake through `PinningTLSVerifier`: nil when it succeeded, else its error.
    static func handshake(port: Int, store: PinStore, world: World) async throws -> (any Error)? {
        let verifier = PinningTLSVerifier(store: store, trustRoots: world.pki.trustRoots, updateOnMismatch: false)
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: Void.self)
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try verifier.makeClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        defer { channel.close(promise: nil) }
        do {
            try await done.futureResult.get()
            return nil
        } catch {
            return error
        }
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

    @Test(.timeLimit(.minutes(10)))
    func theURLSessionAllowsACompliantLeafAndRefusesOneWithOneSCT() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(mode: .enforce), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.compliant)
        let bad = try await TestHTTPSServer.start(presenting: world.oneSCT)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown(); try? await bad.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let session = Self.session(store, world)
        let (data, _) = try await session.data(from: good.url(host: "localhost"))
        #expect(String(decoding: data, as: UTF8.self) == TestHTTPSServer.responseBody)
        let error = await #expect(throws: URLError.self) { try await session.data(from: bad.url(host: "localhost")) }
        #expect(error.flatMap(Self.ctViolation)?.problem == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test(.timeLimit(.minutes(10)))
    func theNIOVerifierAllowsACompliantLeafAndRefusesOneWithOneSCT() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(mode: .enforce), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.compliant)
        let bad = try await TestHTTPSServer.start(presenting: world.oneSCT)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown(); try? await bad.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let events = store.decisions()
        #expect(try await Self.handshake(port: good.port, store: store, world: world) == nil)
        #expect(try await Self.handshake(port: bad.port, store: store, world: world) != nil)
        var iterator = events.makeAsyncIterator()
        _ = await iterator.next()
        let refusal = await iterator.next()
        guard let violation = refusal?.failure?.reason.certificateTransparencyViolation else {
            Issue.record("expected a CT refusal, got \(String(describing: refusal))")
            return
        }
        #expect(violation.problem == .tooFewSCTs(required: 2, counted: 1))
    }

    @Test(.timeLimit(.minutes(10)))
    func reportOnlyRecordsTheShortfallAndLetsTheConnectionThrough() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(mode: .reportOnly), signedWith: world.key)
        let bad = try await TestHTTPSServer.start(presenting: world.oneSCT)
        defer { Task { try? await lists.shutdown(); try? await bad.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let events = store.decisions()
        _ = try await Self.session(store, world).data(from: bad.url(host: "localhost"))
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.enforced == false)
        guard case .certificateTransparencyNotMet? = event?.failure?.reason else {
            Issue.record("expected a reported CT failure, got \(String(describing: event))")
            return
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aStaleLogListFailsOpenAndSaysSo() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(mode: .enforce, logListAge: 71 * 86_400), signedWith: world.key)
        let bad = try await TestHTTPSServer.start(presenting: world.oneSCT)
        defer { Task { try? await lists.shutdown(); try? await bad.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let events = store.decisions()
        _ = try await Self.session(store, world).data(from: bad.url(host: "localhost"))
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.decision.isAllowed == true)
        #expect(event?.certificateTransparencyFailedOpen == true)
    }

    @Test(.timeLimit(.minutes(10)))
    func aListThatTurnsCTOnClosesPooledConnectionsAdmittedBeforeIt() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(mode: nil), signedWith: world.key)
        let bad = try await TestHTTPSServer.start(presenting: world.oneSCT)
        defer { Task { try? await lists.shutdown(); try? await bad.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let session = Self.session(store, world)
        _ = try await session.data(from: bad.url(host: "localhost"))          // admitted: no CT yet
        try lists.publish(world.list(mode: .enforce))                           // the team turns CT on
        #expect(await store.update(mode: .forced) == .ok)
        let error = await #expect(throws: URLError.self) { try await session.data(from: bad.url(host: "localhost")) }
        #expect(error.flatMap(Self.ctViolation) != nil)
        #expect(bad.requestCount == 1)   // the second request never reached the server
    }
}
#endif
