import Dispatch
import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import PinStore
@testable import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// AsyncHTTPClient's side of the one admission gate: a write after a list change is re-checked
/// before it goes out, and a list change closes refused connections without waiting for them.
@Suite struct AdmissionGateHandlerTests {
    static func leaf() throws -> Data {
        try TestResources.certificate("pki/localhost-dnsonly.pem").derRepresentation
    }

    /// A test channel with the gate's handler. The async testing channel, not `EmbeddedChannel`:
    /// these tests await between uses, and an embedded loop used from another thread is NIO API
    /// misuse (a warning today, a crash in a later NIO).
    static func channel(store: PinStore, gate: AdmissionGate) async throws -> NIOAsyncTestingChannel {
        try await NIOAsyncTestingChannel { channel in
            try channel.pipeline.syncOperations.addHandler(AdmissionGateHandler(store: store, gate: gate))
        }
    }

    @Test func writeAfterAListChangeThatWithdrewThePinIsRefusedAndClosesTheConnection() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        defer { Task { await list.shutdown() } }
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let gate = AdmissionGate(evidence: .leaf(try Self.leaf(), peerAddress: "127.0.0.1"), admittedUnder: store.listGeneration)
        let channel = try await Self.channel(store: store, gate: gate)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()

        try await channel.writeAndFlush(ByteBuffer(string: "GET /first")).get()
        #expect(try await channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "GET /first"))

        // The next list no longer pins localhost; nobody told the connection.
        try list.publish([Pins.entry("pki/api-p256.pem", name: "api.pinstore.test")])
        #expect(await store.update(mode: .forced) == .ok)
        let refusal = await #expect(throws: PinningFailure.self) {
            try await channel.writeAndFlush(ByteBuffer(string: "GET /second")).get()
        }
        #expect(refusal?.reason == .noPinsForHost(updateResult: nil))
        #expect(try await channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(await eventually { !channel.isActive })
    }

    @Test func writeAfterAListChangeThatKeptThePinGoesOut() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        defer { Task { await list.shutdown() } }
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let gate = AdmissionGate(evidence: .leaf(try Self.leaf(), peerAddress: "127.0.0.1"), admittedUnder: store.listGeneration)
        let channel = try await Self.channel(store: store, gate: gate)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()

        try list.publish([Pins.entry("pki/localhost-dnsonly.pem"), Pins.entry("pki/api-p256.pem", name: "api.pinstore.test")])
        #expect(await store.update(mode: .forced) == .ok)
        try await channel.writeAndFlush(ByteBuffer(string: "GET /after")).get()
        #expect(try await channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "GET /after"))
        #expect(channel.isActive)
    }

    /// The old list-change handler waited for every close off the event loops: with the
    /// connection's event loop busy, the store's update could not return until it was free.
    @Test func listChangeStartsClosingARefusedConnectionWithoutWaitingForItsEventLoop() async throws {
        // The list pins another host only: the connection's leaf is no longer allowed.
        let store = try Pins.store([Pins.entry("pki/api-p256.pem", name: "api.pinstore.test")])
        let connections = PinnedConnections(store: store, updateOnEmpty: false, updateOnMismatch: false, logger: nil)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let channel = try await ClientBootstrap(group: group).connect(to: try #require(server.localAddress)).get()
        connections.remember(channel, leaf: try Self.leaf(), peerAddress: "127.0.0.1")
        #expect(connections.admittedCount == 1)

        // The connection's event loop is busy until the test releases it.
        let release = DispatchSemaphore(value: 0)
        channel.eventLoop.execute { release.wait() }
        let returned = Locked(false)
        DispatchQueue.global().async {
            connections.listChanged()
            returned.withLock { $0 = true }
        }
        let returnedWhileTheLoopWasBusy = await eventually { returned.withLock { $0 } }
        release.signal()

        try await channel.closeFuture.get()
        #expect(returnedWhileTheLoopWasBusy)
        #expect(await eventually { connections.admittedCount == 0 })
        try await server.close()
        try await group.shutdownGracefully()
    }
}
