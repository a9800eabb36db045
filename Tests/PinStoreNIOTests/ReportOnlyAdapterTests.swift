#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
import PinStoreDevServer
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// Report-only mode and the server's `domainsConfig` on the NIO verifier and the pooled URLSession,
/// against real TLS servers on 127.0.0.1 presenting fixture certificates. `attacker` chains to the
/// trusted CA with a key nobody pinned: the impostor report-only mode lets through and reports.
@Suite struct ReportOnlyAdapterTests {
    /// A store pinning localhost to `pki/localhost.pem` (fallback), with `enforcement`.
    static func store(_ enforcement: PinStore.Configuration.Enforcement, serviceURL: URL = URL(string: "http://127.0.0.1:1/unused")!,
                      useChallenge: Bool = false, fallback: Data? = nil) throws -> PinStore {
        var configuration = PinStore.Configuration(
            serviceURL: serviceURL,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            useChallenge: useChallenge,
            fallbackData: fallback,
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-nio-audit-\(UUID().uuidString)"),
            requestTimeout: HangGuard.seconds)
        configuration.enforcement = enforcement
        return try PinStore(configuration: configuration)
    }

    static func goodFallback() throws -> Data { try TestResources.fixture("lists/static-good.json") }

    func verifier(_ store: PinStore) throws -> PinningTLSVerifier {
        PinningTLSVerifier(store: store, trustRoots: try Pins.anchors, updateOnEmpty: false, updateOnMismatch: false)
    }

    func session(_ store: PinStore) throws -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        return URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false, updateOnMismatch: false, basedOn: base))
    }

    /// The first event of `store`'s decision stream.
    func firstEvent(_ stream: AsyncStream<PinningEvent>) async -> PinningEvent? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }

    // MARK: - NIO verifier

    @Test func verifierLetsAnImpostorThroughInReportOnlyModeAndReportsIt() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let store = try Self.store(.reportOnly, fallback: Self.goodFallback())
        let events = store.decisions()
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(store))
        #expect(try outcome.result.get().status == 200)
        #expect(outcome.decision?.reportedFailure?.reason == .pinMismatch)
        let event = await firstEvent(events)
        #expect(event?.enforced == false)
        #expect(event?.failure?.reason == .pinMismatch)
    }

    @Test func verifierStillRefusesAnImpostorWhenEnforced() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Self.store(.enforced, fallback: Self.goodFallback())))
        #expect(outcome.decision?.failure?.reason == .pinMismatch)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func verifierStillRefusesAChainTheNormalEvaluationRefusesInReportOnlyMode() async throws {
        let server = try await TestServer.tls(chain: ["pki/expired.pem", "pki/intermediate-ca.pem"], key: "pki/expired.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Self.store(.reportOnly, fallback: Self.goodFallback())))
        guard case .chainNotTrusted = outcome.decision?.failure?.reason else {
            Issue.record("expected chainNotTrusted, got \(String(describing: outcome.decision))")
            return
        }
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    // MARK: - Pooled URLSession

    @Test func pooledSessionLetsAnImpostorThroughInReportOnlyModeAndReportsIt() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let store = try Self.store(.reportOnly, fallback: Self.goodFallback())
        let events = store.decisions()
        let (data, response) = try await session(store).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        let event = await firstEvent(events)
        #expect(event?.enforced == false)
        #expect(event?.failure?.reason == .pinMismatch)
    }

    @Test func pooledSessionStillRefusesAnImpostorWhenEnforced() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        await #expect(throws: URLError.self) {
            _ = try await session(try Self.store(.enforced, fallback: Self.goodFallback())).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func pooledSessionStillRefusesASelfSignedChainInReportOnlyMode() async throws {
        let server = try await TestServer.tls(chain: ["pki/self-signed.pem"], key: "pki/self-signed.key.pem")
        defer { Task { await server.shutdown() } }
        await #expect(throws: URLError.self) {
            _ = try await session(try Self.store(.reportOnly, fallback: Self.goodFallback())).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    // MARK: - domainsConfig through the development list server in challenge mode

    /// A challenge-mode list server pinning another host, with `config` (or none) in the body.
    static func challengeListServer(domainsConfig config: String?) async throws -> ListServer {
        let entry = FingerprintEntry(name: "other.pinstore.test", fingerprint: try TestResources.certificate("pki/localhost.pem").fingerprint,
                                     expires: 4_102_444_799)
        var body = try FingerprintListSigner.challengeModeBody([entry], timestamp: 1_893_456_000)
        if let config {
            var text = String(decoding: body, as: UTF8.self)
            text.replaceSubrange(text.startIndex...text.startIndex, with: "{\"domainsConfig\": \(config), ")
            body = Data(text.utf8)
        }
        let key = try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
        return try await ListServer.start(responder: ListResponders.challengeList(body: body, signingKey: key))
    }

    @Test func pooledSessionAllowsAnUnpinnedHostTheSignedChallengeListExempts() async throws {
        let list = try await Self.challengeListServer(domainsConfig: #"{"sslPinningRequiredForUnlisted": false}"#)
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown(); try? await list.shutdown() } }
        let store = try Self.store(.enforced, serviceURL: list.baseURL.appendingPathComponent("list.json"), useChallenge: true)
        #expect(await store.update() == .ok)
        let (_, response) = try await session(store).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }

    @Test func pooledSessionRefusesTheSameHostWhenTheChallengeListHasNoSwitch() async throws {
        let list = try await Self.challengeListServer(domainsConfig: nil)
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown(); try? await list.shutdown() } }
        let store = try Self.store(.enforced, serviceURL: list.baseURL.appendingPathComponent("list.json"), useChallenge: true)
        #expect(await store.update() == .ok)
        await #expect(throws: URLError.self) {
            _ = try await session(store).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }
}
#endif
