import AsyncHTTPClient
import NIOCore
import NIOEmbedded
import NIOPosix
import PinStore
import PinStoreAsyncHTTPClient
import Testing

/// AsyncHTTPClient does TLS through swift-nio-ssl only on NIOPosix's event loops; on macOS its
/// default group (NIOTransportServices) does it in Network.framework, where the pin check sees
/// no certificate. Such a group is refused when the configuration is pinned, not per request.
/// No Network.framework here: `EmbeddedEventLoop` stands for it, a group on which NIOPosix's
/// `ClientBootstrap` does not run, exactly the property AsyncHTTPClient's choice rests on.
@Suite struct PinnedEventLoopGroupTests {
    @Test func groupWithoutSwiftNIOSSLIsRefusedWhenTheConfigurationIsPinned() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        var configuration = HTTPClient.Configuration(tlsConfiguration: try Pins.tls())
        let error = #expect(throws: PinnedHTTPClientError.self) {
            try configuration.pin(with: try Pins.store(), eventLoopGroup: loop)
        }
        #expect(error?.code == .unsupportedEventLoopGroup)
        #expect(error?.reason.contains("MultiThreadedEventLoopGroup.singleton") == true)
        // Nothing half-pinned is left behind.
        #expect(configuration.http1_1ConnectionDebugInitializer == nil)
        #expect(configuration.http2ConnectionDebugInitializer == nil)
    }

    @Test func everyPinnedEntryPointRefusesSuchAGroup() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        let store = try Pins.store()
        let viaConfiguration = #expect(throws: PinnedHTTPClientError.self) {
            _ = try HTTPClient.Configuration.pinned(by: store, eventLoopGroup: loop, tlsConfiguration: try Pins.tls())
        }
        #expect(viaConfiguration?.code == .unsupportedEventLoopGroup)
        let viaClient = #expect(throws: PinnedHTTPClientError.self) {
            _ = try HTTPClient(pinnedBy: store, eventLoopGroup: loop)
        }
        #expect(viaClient?.code == .unsupportedEventLoopGroup)
    }

    @Test func asyncHTTPClientsDefaultGroupIsPinnableWhereItIsNIOPosix() throws {
        var configuration = HTTPClient.Configuration()
        #if canImport(Network)
        // macOS: the default is NIOTransportServices' group (TLS in Network.framework).
        let error = #expect(throws: PinnedHTTPClientError.self) { try configuration.pin(with: try Pins.store()) }
        #expect(error?.code == .unsupportedEventLoopGroup)
        #else
        try configuration.pin(with: try Pins.store())
        #expect(configuration.http1_1ConnectionDebugInitializer != nil)
        #endif
    }

    @Test func nioPosixGroupsArePinnable() throws {
        let store = try Pins.store()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        _ = try HTTPClient.Configuration.pinned(by: store, eventLoopGroup: group)
        _ = try HTTPClient.Configuration.pinned(by: store, eventLoopGroup: group.next())
    }

    @Test func clientPinnedByItsInitializerAdmitsThePinnedServerAndRefusesTheImpostor() async throws {
        let real = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let impostor = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        var configuration = HTTPClient.Configuration(tlsConfiguration: try Pins.tls())
        configuration.timeout.connect = .seconds(60)   // as Pins.client: the pin check runs inside the connect
        configuration.dnsOverride = Pins.loopbackOverride()
        let client = try HTTPClient(pinnedBy: try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]),
                                    configuration: configuration, updateOnMismatch: false)
        var body: String?
        var refusal: (any Error)?
        do {
            body = try await Pins.get(client, real).1
            _ = try await Pins.get(client, impostor)
        } catch {
            refusal = error
        }
        try await client.shutdown()
        await real.shutdown()
        await impostor.shutdown()
        #expect(body == "hello over a pinned connection")
        #expect((refusal as? PinningFailure)?.reason == .pinMismatch)
        #expect(impostor.receivedBytes == 0)
        #expect(client.eventLoopGroup === MultiThreadedEventLoopGroup.singleton)
    }
}
