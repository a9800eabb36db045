#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
import PinStoreDevServer
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A leaked list-signing key, handled by publishing a new key document: no release, no
/// restart. Everything is real and on 127.0.0.1: the partner's TLS server (`localhost.pem`),
/// an impostor under the same test CA (`attacker.pem`), the team's list server serving the
/// list and `/keys.json`, and the pinned URLSession of a store that is never recreated.
@Suite struct KeyLeakDrillTests {
    /// What the list server publishes; the test (as the team, then as whoever holds the leaked
    /// key and answers the list request) changes it.
    final class Published: Sendable {
        let list = Locked(Data())
        let keys = Locked(KeyDocumentTools.emptyChain)

        func publishList(_ body: Data) throws { list.withLock { $0 = body } }
        func publishKeys(_ body: Data) throws { keys.withLock { $0 = body } }
    }

    static func entry(_ certificate: String) throws -> FingerprintEntry {
        FingerprintEntry(name: "localhost", fingerprint: try TestResources.certificate("pki/\(certificate).pem").fingerprint,
                         expires: 4_102_444_799)
    }

    /// A list pinning `certificates`, signed by `keys` (the first one also per entry).
    static func list(_ certificates: [String], version: Int64, keys: [P256PrivateKey]) throws -> Data {
        try FingerprintListSigner(privateKey: keys[0], additionalKeys: Array(keys.dropFirst()))
            .staticList(certificates.map(entry), timestamp: Int64(Date().timeIntervalSince1970), version: version)
    }

    /// One GET of /hello through a pinned URLSession; whether it got the page.
    static func get(port: Int, store: PinStore) async throws -> Bool {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        let session = URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnMismatch: false, basedOn: base))
        do {
            let (data, _) = try await session.data(from: URL(string: "https://localhost:\(port)/hello")!)
            return String(decoding: data, as: UTF8.self) == "hello over a pinned connection"
        } catch let error as URLError where error.code == .serverCertificateUntrusted {
            return false
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aLeakedKeyIsRetiredByANewKeyDocumentWithoutARestart() async throws {
        let leaked = try P256PrivateKey()                       // key set 1: this key alone
        let (second, third) = (try P256PrivateKey(), try P256PrivateKey())
        let published = Published()
        try published.publishList(Self.list(["localhost"], version: 1, keys: [leaked]))
        let lists = try await ListServer.start(responder: ListResponders.withKeyDocuments({ published.keys.withLock { $0 } }) { _ in
            ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: published.list.withLock { $0 })
        })
        let partner = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        let impostor = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-leak-\(UUID().uuidString)")
        defer {
            Task {
                try? await lists.shutdown()
                await partner.shutdown()
                await impostor.shutdown()
                try? FileManager.default.removeItem(at: directory)
            }
        }
        // Today's one-key configuration, plus the key documents published beside the list.
        var configuration = PinStore.Configuration(serviceURL: lists.baseURL.appendingPathComponent("list.json"),
                                                   publicKey: try leaked.publicKey.x963Representation.base64EncodedString(),
                                                   storageDirectory: directory, requestTimeout: 60)
        configuration.keyDocumentURL = lists.baseURL.appendingPathComponent("keys.json")
        let store = try PinStore(configuration: configuration)
        #expect(await store.update() == .ok)
        #expect(try await Self.get(port: partner.port, store: store))
        #expect(try await !Self.get(port: impostor.port, store: store))

        // The key leaks, and whoever holds it answers the list request: the impostor is pinned.
        try published.publishList(Self.list(["attacker"], version: 2, keys: [leaked]))
        #expect(await store.update(mode: .forced) == .ok)
        #expect(try await Self.get(port: impostor.port, store: store))
        let impostorBytes = impostor.receivedBytes.withLock { $0 }

        // The team publishes key document 2 (two new keys, both needed), signed by the old key
        // set and by the new one, and a list signed by the new keys.
        let document = try KeyDocumentTools.document(version: 2, expires: Int64(Date().timeIntervalSince1970) + 86_400 * 365,
                                                     threshold: 2, keys: [second.publicKey, third.publicKey],
                                                     signers: [leaked, second, third])
        try published.publishKeys(KeyDocumentTools.append(document, to: nil))
        try published.publishList(Self.list(["localhost"], version: 3, keys: [second, third]))
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.keySetVersion == 2)
        #expect(try await Self.get(port: partner.port, store: store))
        #expect(try await !Self.get(port: impostor.port, store: store))

        // The leaked key alone no longer publishes anything, whatever version it claims.
        try published.publishList(Self.list(["attacker"], version: 4, keys: [leaked]))
        #expect(await store.update(mode: .forced) == .invalidSignature)
        #expect(try await !Self.get(port: impostor.port, store: store))
        #expect(try await Self.get(port: partner.port, store: store))
        #expect(impostor.receivedBytes.withLock { $0 } == impostorBytes)   // not a byte since the rotation
    }
}
#endif
