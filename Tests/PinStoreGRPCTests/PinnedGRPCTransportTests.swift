import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC
import PinStoreTesting
import Testing

/// The pinned gRPC transport against a real gRPC server (grpc-swift-nio-transport's HTTP/2
/// server with TLS on 127.0.0.1), with a store fed by a signed list from a loopback list server.
@Suite struct PinnedGRPCTransportTests {
    /// A PKI for `localhost`, a list-signing key, a list server pinning the genuine leaf, and a
    /// store that holds that list.
    @available(macOS 15.0, *)
    struct World {
        let pki: TestPKI
        let key: TestListSigningKey
        let lists: TestListServer
        let store: PinStore

        static func start(configure: (inout PinStore.Configuration) -> Void = { _ in }) async throws -> World {
            let pki = try TestPKI(hosts: ["localhost"])
            return try await start(pki: pki, list: TestPinList(pinning: [pki.leaf.certificate]), configure: configure)
        }

        static func start(pki: TestPKI, list: TestPinList, configure: (inout PinStore.Configuration) -> Void = { _ in }) async throws -> World {
            let key = try TestListSigningKey()
            let lists = try await TestListServer.start(serving: list, signedWith: key)
            var configuration = PinStore.Configuration(
                serviceURL: lists.listURL, publicKey: key.publicKeyBase64,
                storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-grpc-\(UUID().uuidString)"),
                requestTimeout: 60)
            configuration.requireListSignature = true
            configure(&configuration)
            let store = try PinStore(configuration: configuration)
            #expect(await store.update(mode: .forced) == .ok)
            return World(pki: pki, key: key, lists: lists, store: store)
        }

        /// A pinned transport to `server`, judged for `localhost`. Both roots are trusted, so
        /// the impostor's chain passes the normal evaluation (a mis-issuing CA) and only pinning
        /// can refuse it.
        func transport(to server: TestGRPCServer) throws -> HTTP2ClientTransport.Posix {
            try HTTP2ClientTransport.Posix(pinnedBy: store, target: .ipv4(address: "127.0.0.1", port: server.port),
                                           serverHostname: "localhost",
                                           trustRoots: .anchors([pki.root, pki.impostorRoot]),
                                           updateOnEmpty: false, updateOnMismatch: false)
        }

        func shutdown() async {
            try? await lists.shutdown()
        }
    }

    /// One Echo RPC; bounded so a failure cannot hang the suite. Ten minutes: a hang guard, not a
    /// speed check (30 s ran out for RPCs to a loopback server beside other builds and a CPU hog).
    @available(macOS 15.0, *)
    static func echo(_ client: GRPCClient<HTTP2ClientTransport.Posix>, _ bytes: [UInt8]) async throws -> [UInt8] {
        var options = CallOptions.defaults
        options.timeout = .seconds(600)
        return try await client.unary(request: ClientRequest(message: bytes), descriptor: EchoService.method,
                                      serializer: RawBytesCoder(), deserializer: RawBytesCoder(), options: options) { response in
            try response.message
        }
    }

    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func aPinnedServerIsReached() async throws {
        let world = try await World.start()
        let server = try await TestGRPCServer.start(presenting: world.pki.leaf)
        let answer = try await withGRPCClient(transport: try world.transport(to: server)) { client in
            try await Self.echo(client, Array("pinned".utf8))
        }
        await server.shutdown()
        await world.shutdown()
        #expect(answer == Array("pinned".utf8))
        #expect(server.calls.count == 1)
        // The RPC was addressed to the host its certificate was judged for, not to the address.
        #expect(server.authorities.all == ["localhost"])
    }

    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func anImpostorIsRefusedBeforeAnyRPCByteReachesTheServer() async throws {
        let world = try await World.start()
        let impostor = try await TestGRPCServer.start(presenting: world.pki.impostor)
        var refusal: (any Error)?
        do {
            _ = try await withGRPCClient(transport: try world.transport(to: impostor)) { client in
                try await Self.echo(client, Array("secret".utf8))
            }
        } catch {
            refusal = error
        }
        await impostor.shutdown()
        await world.shutdown()
        // The client reached the server's socket: the refusal was the pin check's, in the handshake.
        #expect(impostor.connections.count >= 1)
        #expect(refusal.flatMap(PinningFailure.init(unwrapping:))?.reason == .pinMismatch)
        #expect(impostor.streams.count == 0)
        #expect(impostor.calls.count == 0)
    }

    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func theRefusedRPCsErrorSaysPinStoreRefusedTheServerAndWhy() async throws {
        let world = try await World.start()
        let impostor = try await TestGRPCServer.start(presenting: world.pki.impostor)
        var refusal: (any Error)?
        do {
            _ = try await withGRPCClient(transport: try world.transport(to: impostor)) { client in
                try await Self.echo(client, Array("secret".utf8))
            }
        } catch {
            refusal = error
        }
        await impostor.shutdown()
        await world.shutdown()
        let error = try #require(refusal as? RPCError, "\(String(describing: refusal))")
        let failure = try #require(PinningFailure(unwrapping: error), "\(error)")
        #expect(failure.reason == .pinMismatch)
        // The message itself, not only a cause three levels down, says the client refused and why.
        #expect(error.code == .unavailable)
        #expect(error.message.contains("refused by PinStore (the client ended the connection; the server did not close it): \(failure.summary)"),
                "\(error.message)")
        #expect("\(error)".contains("refused by PinStore"), "\(error)")
        // The PinningFailure is the error's own cause.
        #expect(error.cause.map { $0 is PinningFailure } == true, "\(String(describing: error.cause))")
    }

    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func aListUpdateThatWithdrawsThePinClosesTheConnection() async throws {
        let world = try await World.start()
        let server = try await TestGRPCServer.start(presenting: world.pki.leaf)
        let transport = try world.transport(to: server)
        let (first, after): ([UInt8], [Result<[UInt8], any Error>]) = try await withGRPCClient(transport: transport) { client in
            let first = try await Self.echo(client, Array("before".utf8))
            // The team rotates to another certificate: the one this connection was admitted with
            // is no longer pinned.
            let rotated = try world.pki.issueLeaf(for: ["localhost"])
            try world.lists.publish(TestPinList(pinning: [rotated.certificate]))
            #expect(await world.store.update(mode: .forced) == .ok)
            // gRPC may fail an RPC made while it notices the closed connection with its own
            // "unavailable"; the ones after it fail as the reconnection's handshake is refused.
            // Bounded poll for that refusal.
            var after: [Result<[UInt8], any Error>] = []
            for _ in 0..<50 {
                let result = await Result(catching: { try await Self.echo(client, Array("after".utf8)) })
                after.append(result)
                if case .failure(let error) = result, PinningFailure(unwrapping: error) != nil { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            return (first, after)
        }
        await server.shutdown()
        await world.shutdown()
        #expect(first == Array("before".utf8))
        // Every RPC after the update failed, and the pin failure says why.
        #expect(after.allSatisfy { if case .failure = $0 { true } else { false } })
        guard case .failure(let error)? = after.last else {
            Issue.record("an RPC after the pin was withdrawn succeeded")
            return
        }
        #expect(PinningFailure(unwrapping: error)?.reason == .pinMismatch, "\(String(reflecting: error))")
        #expect("\(error)".contains("refused by PinStore"), "\(error)")
        // The server saw the first RPC only: nothing more was written on the withdrawn connection,
        // and no new connection was admitted.
        #expect(server.calls.count == 1)
        #expect(server.streams.count == 1)
    }
}

extension PinnedGRPCTransportTests {
    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func aListUpdateThatWithdrawsThePinClosesAnIdleConnectionWithoutWaitingForAnRPC() async throws {
        let world = try await World.start()
        let server = try await TestGRPCServer.start(presenting: world.pki.leaf)
        let closedAfterUpdate = try await withGRPCClient(transport: try world.transport(to: server)) { client in
            _ = try await Self.echo(client, Array("before".utf8))
            #expect(server.closedConnections.count == 0)
            let rotated = try world.pki.issueLeaf(for: ["localhost"])
            try world.lists.publish(TestPinList(pinning: [rotated.certificate]))
            #expect(await world.store.update(mode: .forced) == .ok)
            // The client closed it before the update returned; waits for the server to see it
            // (the test's time limit is the hang guard; a count of polls measured the machine).
            while server.closedConnections.count == 0 {
                try await Task.sleep(for: .milliseconds(100))
            }
            return server.closedConnections.count
        }
        await server.shutdown()
        await world.shutdown()
        #expect(closedAfterUpdate >= 1)
        #expect(server.calls.count == 1)
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
