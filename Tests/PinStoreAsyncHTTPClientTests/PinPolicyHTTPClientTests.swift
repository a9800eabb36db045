import AsyncHTTPClient
import Foundation
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import Testing

/// Static pin policies through the pinned `HTTPClient`, which sees only the server's leaf:
/// a leaf SPKI policy is enforced, and a CA policy (which only the chain could prove) is
/// refused with `issuerPinsNeedChain`, never let through. Real TLS servers on 127.0.0.1.
@Suite struct PinPolicyHTTPClientTests {
    static func spki(_ certificate: String) throws -> String { try TestResources.certificate("pki/\(certificate).pem").spkiSHA256Base64 }
    static let backup = Data(repeating: 0xB0, count: 32).base64EncodedString()

    static func store(_ pin: PinIdentity) throws -> PinStore {
        try PinStore(configuration: .init(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ahc-policies-\(UUID().uuidString)"),
            requestTimeout: HangGuard.seconds,
            policies: [PinPolicy(domain: "localhost", pins: [pin, .leafKey(spkiSHA256Base64: backup)])]))
    }

    /// The status of GET /hello, or the pinning failure that refused it.
    static func outcome(_ store: PinStore, chain: String, key: String) async throws -> (status: UInt?, failure: PinningFailure?, receivedBytes: Int) {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/\(chain).pem"], key: "pki/\(key).key.pem")
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        var status: UInt?
        var failure: PinningFailure?
        do {
            status = try await Pins.get(client, server).0.status.code
        } catch let error as PinningFailure {
            failure = error
        } catch {
            Issue.record("expected a pinning failure, got \(error)")
        }
        try await client.shutdown()
        await server.shutdown()
        return (status, failure, server.receivedBytes)
    }

    @Test func aLeafKeyPolicyAcceptsARenewedLeafWithTheSameKey() async throws {
        let result = try await Self.outcome(try Self.store(.leafKey(spkiSHA256Base64: Self.spki("localhost-dnsonly"))),
                                            chain: "localhost-renewed-dnsonly-chain", key: "localhost-renewed-dnsonly")
        #expect(result.status == 200)
    }

    @Test func aLeafKeyPolicyRefusesAnotherKey() async throws {
        let result = try await Self.outcome(try Self.store(.leafKey(spkiSHA256Base64: Self.spki("localhost-dnsonly"))),
                                            chain: "attacker-dnsonly-chain", key: "attacker-dnsonly")
        #expect(result.failure?.reason == .pinMismatch)
        #expect(result.receivedBytes == 0)
    }

    @Test func aCAPolicyIsRefusedAsNeedingTheChainEvenUnderThePinnedCA() async throws {
        let result = try await Self.outcome(try Self.store(.caKey(spkiSHA256Base64: Self.spki("intermediate-ca"))),
                                            chain: "localhost-dnsonly-chain", key: "localhost-dnsonly")
        #expect(result.failure?.reason == .issuerPinsNeedChain)
        #expect(result.receivedBytes == 0)
    }

    @Test func aCAPolicyRefusesALeafUnderAnotherCA() async throws {
        let result = try await Self.outcome(try Self.store(.caKey(spkiSHA256Base64: Self.spki("intermediate-ca"))),
                                            chain: "localhost-other-ca-dnsonly-chain", key: "localhost-other-ca-dnsonly")
        #expect(result.failure?.reason == .issuerPinsNeedChain)
        #expect(result.receivedBytes == 0)
    }
}
