import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// The signed list's revocations on AsyncHTTPClient, which shows only the leaf: a revoked leaf is
/// refused as revoked; a revocation the leaf cannot rule out (a CA key) refuses with
/// `revocationsNeedChain`, never skipped. Real TLS on 127.0.0.1 (PinStoreTesting's servers).
@Suite(.serialized) struct ListRevocationHTTPClientTests {
    struct World {
        let pki: TestPKI
        let stolen: TestIdentity
        let key: TestListSigningKey

        init() throws {
            pki = try TestPKI(hosts: ["localhost"])
            stolen = try pki.issueLeaf(for: ["localhost"])
            key = try TestListSigningKey()
        }

        /// Pins the intermediate CA's key for localhost, and (for this adapter, which cannot
        /// prove a CA pin from a leaf) both leaves' keys, revoking `revocations`.
        func list(revoking revocations: [TestRevocation] = []) throws -> TestPinList {
            func key(_ certificate: X509Certificate) throws -> Data { try #require(Data(base64Encoded: certificate.spkiSHA256Base64)) }
            var list = TestPinList(entries: [
                FingerprintEntry(name: "localhost", fingerprint: try key(pki.intermediate), expires: 4_102_444_799, kind: .caPublicKey),
                FingerprintEntry(name: "localhost", fingerprint: try key(pki.leaf.certificate), expires: 4_102_444_799, kind: .publicKey),
                FingerprintEntry(name: "localhost", fingerprint: try key(stolen.certificate), expires: 4_102_444_799, kind: .publicKey),
            ])
            list.revocations = revocations
            return list
        }
    }

    static func get(_ client: HTTPClient, _ server: TestHTTPSServer) async throws -> String {
        let response = try await client.execute(HTTPClientRequest(url: "https://localhost:\(server.port)/"), timeout: .seconds(Int64(HangGuard.seconds)))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedLeafIsRefusedAsRevokedAndItsSiblingAllowed() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.certificate(world.stolen.certificate)]), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown(); try? await stolen.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, trusting: world.pki.root)
        let (body, failure) = try await Pins.using(client) {
            (try await Self.get(client, good), await #expect(throws: PinningFailure.self) { try await Self.get(client, stolen) })
        }
        #expect(body == TestHTTPSServer.responseBody)
        #expect(failure?.reason.listRevocation?.kind == .certificate)
        #expect(stolen.requestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedLeafUnderACAPinAloneIsRefusedAsRevokedBeforeThePinIsLookedAt() async throws {
        let world = try World()
        var list = try world.list(revoking: [.certificate(world.stolen.certificate)])
        list.entries = [list.entries[0]]   // the CA key pin only, which a leaf alone cannot prove
        let lists = try await TestListServer.start(serving: list, signedWith: world.key)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await stolen.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, trusting: world.pki.root)
        let failure = try await Pins.using(client) {
            await #expect(throws: PinningFailure.self) { try await Self.get(client, stolen) }
        }
        #expect(failure?.reason.listRevocation?.kind == .certificate)
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevokedCAKeyTheLeafCannotRuleOutRefusesWithItsReason() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(revoking: [.key(of: world.pki.intermediate)]), signedWith: world.key)
        let good = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        defer { Task { try? await lists.shutdown(); try? await good.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, trusting: world.pki.root)
        let failure = try await Pins.using(client) {
            await #expect(throws: PinningFailure.self) { try await Self.get(client, good) }
        }
        #expect(failure?.reason == .revocationsNeedChain)
        #expect(failure?.summary.contains("cannot rule out from the server's leaf alone") == true)
        #expect(good.requestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aListUpdateThatRevokesALeafClosesItsPooledConnectionWithoutARestart() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: try world.list(), signedWith: world.key)
        let stolen = try await TestHTTPSServer.start(presenting: world.stolen)
        defer { Task { try? await lists.shutdown(); try? await stolen.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, trusting: world.pki.root)
        let failure = try await Pins.using(client) {
            #expect(try await Self.get(client, stolen) == TestHTTPSServer.responseBody)        // admitted under the CA pin
            try lists.publish(try world.list(revoking: [.certificate(world.stolen.certificate)]))
            #expect(await store.update(mode: .forced) == .ok)
            return await #expect(throws: PinningFailure.self) { try await Self.get(client, stolen) }
        }
        #expect(failure?.reason.listRevocation?.kind == .certificate)
        #expect(stolen.requestCount == 1)   // the pooled connection carried nothing more
    }
}
