import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// Report-only mode on a pinned `HTTPClient` (the leaf rule), against real TLS servers on 127.0.0.1.
@Suite struct ReportOnlyHTTPClientTests {
    /// A store pinning localhost to `pki/localhost-dnsonly.pem` (fallback), with `enforcement`.
    static func store(_ enforcement: PinStore.Configuration.Enforcement) throws -> PinStore {
        var configuration = PinStore.Configuration(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            fallbackData: try TestResources.fixture("lists/static-good.json"),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ahc-audit-\(UUID().uuidString)"),
            requestTimeout: HangGuard.seconds)
        configuration.enforcement = enforcement
        return try PinStore(configuration: configuration)
    }

    @Test func impostorIsLetThroughInReportOnlyModeAndReported() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let store = try Self.store(.reportOnly)
        let events = store.decisions()
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        // Shut the client down whatever happens: AsyncHTTPClient traps on a client dropped running.
        let outcome: Result<(HTTPClientResponse, String), any Error>
        do { outcome = .success(try await Pins.get(client, server)) } catch { outcome = .failure(error) }
        try await client.shutdown()
        await server.shutdown()
        let (response, body) = try outcome.get()
        #expect(response.status == .ok)
        #expect(body == "hello over a pinned connection")
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.enforced == false)
        #expect(event?.failure?.reason == .pinMismatch)
        #expect(event?.host == "localhost")
    }

    @Test func impostorIsStillRefusedWhenEnforced() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let client = try Pins.client(try Self.store(.enforced), updateOnEmpty: false, updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .pinMismatch)
        #expect(server.receivedBytes == 0)
    }

    @Test func selfSignedChainIsStillRefusedInReportOnlyMode() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/self-signed-dnsonly.pem"], key: "pki/self-signed-dnsonly.key.pem")
        let client = try Pins.client(try Self.store(.reportOnly), updateOnEmpty: false, updateOnMismatch: false)
        await #expect(throws: (any Error).self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(server.receivedBytes == 0)
    }
}
