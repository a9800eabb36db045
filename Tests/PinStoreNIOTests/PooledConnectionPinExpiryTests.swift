#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A pooled connection must stop carrying requests when the only pin that admitted it expires,
/// as a new connection to the host would then be refused. Real TLS server on 127.0.0.1.
@Suite struct PooledConnectionPinExpiryTests {
    /// A clock the test moves; background sleeps wait in real time (the test never needs them).
    final class SteppedClock: PinStoreClock {
        let current: Locked<Date>
        init(_ date: Date) { current = Locked(date) }
        func now() -> Date { current.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
        func sleep(until deadline: Date) async throws { try await Task.sleep(for: .seconds(3_600)) }
    }

    final class OneList: FingerprintListFetcher {
        let body: Data
        init(_ body: Data) { self.body = body }
        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            FingerprintListResponse(statusCode: 200, headers: ["content-type": "application/json"], body: body)
        }
    }

    @Test func pooledConnectionCarriesNoRequestOnceItsOnlyPinHasExpired() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-review-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let start = Date()
        let clock = SteppedClock(start)
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        let der = try TestResources.certificate("pki/localhost.pem").derRepresentation
        let list = try signer.staticList([FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(der),
                                                          expires: Int64(start.timeIntervalSince1970) + 3_600)])
        let store = try PinStore(configuration: .init(
            serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: directory, requestTimeout: HangGuard.seconds), fetcher: OneList(list), clock: clock)
        #expect(await store.update(mode: .forced) == .ok)
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        let session = URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false,
                                                        updateOnMismatch: false, basedOn: base))
        let url = URL(string: "https://localhost:\(server.port)/hello")!
        _ = try await session.data(from: url)
        #expect(server.connectionCount == 1)

        // Two hours later the pin has expired: a new connection would be refused (no pins).
        clock.advance(7_200)
        #expect(store.matchPins(commonName: "localhost", fingerprint: SHA256Digest.hash(der)) == .empty)
        let error = await #expect(throws: URLError.self) { _ = try await session.data(from: url) }
        #expect((error?.userInfo[NSUnderlyingErrorKey] as? PinningFailure)?.reason == .noPinsForHost(updateResult: nil))
    }
}
#endif
