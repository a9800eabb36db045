import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// An admitted AsyncHTTPClient connection must stop carrying requests when the only pin that
/// admitted it expires, as a new connection would then be refused. Real TLS server on 127.0.0.1.
@Suite struct LeafPinExpiryTests {
    final class SteppedClock: PinStoreClock {
        let current: Locked<Date>
        init(_ date: Date) { current = Locked(date) }
        func now() -> Date { current.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
        func sleep(until deadline: Date) async throws { try await Task.sleep(for: .seconds(3_600)) }
    }

    struct NoList: FingerprintListFetcher {
        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            FingerprintListResponse(statusCode: 404, headers: [:], body: Data())
        }
    }

    @Test func admittedConnectionCarriesNoRequestOnceItsOnlyPinHasExpired() async throws {
        let start = Date()
        let clock = SteppedClock(start)
        let fingerprint = try TestResources.certificate("pki/localhost-dnsonly.pem").fingerprint.base64EncodedString()
        let fallback = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":\#(Int64(start.timeIntervalSince1970) + 3_600)}]}"#
        let store = try PinStore(configuration: .init(
            serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            fallbackData: Data(fallback.utf8),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-review-\(UUID().uuidString)"),
            requestTimeout: HangGuard.seconds), fetcher: NoList(), clock: clock)
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        let (first, _) = try await Pins.get(client, server)
        #expect(first.status == .ok)

        // The connection's gate refuses the write (AsyncHTTPClient reports the closed
        // connection); the next request gets a new connection, refused by the pin check.
        clock.advance(7_200)
        await #expect(throws: (any Error).self) { try await Pins.get(client, server) }
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .noPinsForHost(updateResult: nil))
        #expect(server.requests == ["GET /hello"])
    }
}
