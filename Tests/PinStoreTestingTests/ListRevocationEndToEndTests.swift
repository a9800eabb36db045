#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO
import PinStoreTesting
import Testing

/// The signed list's revocations through real TLS on 127.0.0.1: a list that pins the test
/// intermediate CA's key (so it accepts every leaf that CA issues) and revokes one of them, on
/// the NIO verifier and the pinned URLSession.
@Suite(.serialized) struct ListRevocationEndToEndTests {
    /// A CA, the leaf it issued first, and a second leaf of the same CA whose key was stolen.
    struct World {
        let pki: TestPKI
        let stolen: TestIdentity
        let key: TestListSigningKey

        init() throws {
            pki = try TestPKI(hosts: ["localhost"])
            stolen = try pki.issueLeaf(for: ["localhost"])
            key = try TestListSigningKey()
        }

        /// Pins the intermediate CA's key for localhost, revoking `revocations`.
        func list(revoking revocations: [TestRevocation] = []) throws -> TestPinList {
            let caKey = try #require(Data(base64Encoded: pki.intermediate.spkiSHA256Base64))
            var list = TestPinList(entries: [FingerprintEntry(name: "localhost", fingerprint: caKey, expires: 4_102_444_799, kind: .caPublicKey)])
            list.revocations = revocations
            return list
        }

        func store(listURL: URL, enforcement: PinStore.Configuration.Enforcement = .enforced) throws -> PinStore {
            var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: key.publicKeyBase64,
                                                       storageDirectory: FileManager.default.temporaryDirectory
                                                           .appendingPathComponent("pinstore-revocation-e2e-\(UUID().uuidString)"),
                                                       requestTimeout: 60)
            configuration.requireListSignature = true
            configuration.enforcement = enforcement
            return try PinStore(configuration: configuration)
        }
    }

    static func session(_ store: PinStore, _ world: World) -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = 600  // a hang guard, not a speed check: the servers are on loopback
        return URLSession(configuration: .pinned(by: store, trustRoots: world.pki.trustRoots, updateOnMismatch: false, basedOn: base))
    }

    /// The list revocation behind a failed request, if that is what failed it.
    static func revocation(_ error: any Error) -> ListRevocationMatch? {
        PinningFailure(unwrapping: error)?.reason.listRevocation
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
                    try channel.pipeline.syncOperations.addHandler(CertificateTransparencyEndToEndTests.HandshakeWatcher(done: done))
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

    @Test(.timeLimit(.minutes(10)))
    func theNIOVerifierRefusesARevokedLeafUnderAPinnedCAKeyAndAllowsItsSibling() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.certificate(world.stolen.certificate)]), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown(); try? await stolen.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let events = store.decisions()
        #expect(try await Self.handshake(port: good.port, store: store, world: world) == nil)
        #expect(try await Self.handshake(port: stolen.port, store: store, world: world) != nil)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next()?.decision.isAllowed == true)
        let refusal = await iterator.next()
        #expect(refusal?.failure?.reason.listRevocation?.kind == .certificate)
        #expect(refusal?.failure?.reason.listRevocation?.depth == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func thePinnedURLSessionRefusesARevokedLeafUnderAPinnedCAKeyAndAllowsItsSibling() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.certificate(world.stolen.certificate)]), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown(); try? await stolen.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let session = Self.session(store, world)
        let (data, _) = try await session.data(from: good.url(host: "localhost"))
        #expect(String(decoding: data, as: UTF8.self) == TestHTTPSServer.responseBody)
        let error = await #expect(throws: URLError.self) { try await session.data(from: stolen.url(host: "localhost")) }
        #expect(error.flatMap(Self.revocation)?.kind == .certificate)
        #expect(stolen.requestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedIntermediateRefusesEveryLeafBelowIt() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.key(of: world.pki.intermediate)]), signedWith: world.key)
        let first = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        let second = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await first.shutdown(); try? await second.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let session = Self.session(store, world)
        for server in [first, second] {
            let error = await #expect(throws: URLError.self) { try await session.data(from: server.url(host: "localhost")) }
            let match = error.flatMap(Self.revocation)
            #expect(match?.kind == .key)
            #expect(match?.depth == 1)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func reportOnlyModeStillRefusesARevokedLeaf() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.certificate(world.stolen.certificate)]), signedWith: world.key)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await stolen.shutdown() } }
        let store = try world.store(listURL: lists.listURL, enforcement: .reportOnly)
        #expect(await store.update() == .ok)
        let error = await #expect(throws: URLError.self) { try await Self.session(store, world).data(from: stolen.url(host: "localhost")) }
        #expect(error.flatMap(Self.revocation) != nil)
        #expect(stolen.requestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aListUpdateThatRevokesALeafClosesItsPooledConnectionWithoutARestart() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(), signedWith: world.key)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await stolen.shutdown() } }
        let store = try world.store(listURL: lists.listURL)
        #expect(await store.update() == .ok)
        let session = Self.session(store, world)
        _ = try await session.data(from: stolen.url(host: "localhost"))                    // admitted under the CA pin
        try lists.publish(try world.list(revoking: [.certificate(world.stolen.certificate)]))  // the team revokes it
        #expect(await store.update(mode: .forced) == .ok)
        let error = await #expect(throws: URLError.self) { try await session.data(from: stolen.url(host: "localhost")) }
        #expect(error.flatMap(Self.revocation)?.kind == .certificate)
        #expect(stolen.requestCount == 1)   // the second request never reached the server
    }
}

#endif
