import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// One trust-roots value for every adapter: the pinned AsyncHTTPClient takes PinStore's
/// `TrustRoots` (a private CA from PEM), without the app building a swift-nio-ssl certificate.
@Suite struct TrustRootsHTTPClientTests {
    static func client(_ store: PinStore, trustRoots: TrustRoots?) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.dnsOverride = Pins.loopbackOverride()
        configuration.timeout.connect = .seconds(60)
        return try HTTPClient(pinnedBy: store, eventLoopGroup: Pins.group, configuration: configuration,
                              trustRoots: trustRoots, updateOnEmpty: false, updateOnMismatch: false)
    }

    @Test func aPrivateCAGivenAsTrustRootsFromPEMIsTrusted() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        let client = try Self.client(store, trustRoots: .anchors(pem: TestResources.fixtureText("pki/root-ca.pem")))
        let outcome = await Result { try await Pins.get(client, server).1 }
        try await client.shutdown()
        await server.shutdown()
        #expect(try outcome.get() == "hello over a pinned connection")
    }

    @Test func withoutTheTrustRootsThePrivateCAIsNotTrusted() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        let client = try Self.client(store, trustRoots: nil)
        let outcome = await Result { try await Pins.get(client, server).1 }
        try await client.shutdown()
        await server.shutdown()
        #expect(throws: (any Error).self) { try outcome.get() }
        #expect(server.receivedBytes == 0)
    }

    @Test func theTrustRootsDoNotSwitchOffThePinCheck() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        let client = try Self.client(store, trustRoots: .anchors(pem: TestResources.fixtureText("pki/root-ca.pem")))
        let outcome = await Result { try await Pins.get(client, server).1 }
        try await client.shutdown()
        await server.shutdown()
        guard case .failure(let error) = outcome else {
            Issue.record("an impostor under the trusted CA was reached")
            return
        }
        #expect(PinningFailure(unwrapping: error)?.reason == .pinMismatch)
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
