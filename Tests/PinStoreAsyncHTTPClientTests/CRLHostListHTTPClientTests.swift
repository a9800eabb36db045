import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// The signed list's `crl` section on AsyncHTTPClient, which shows only the leaf: a CRL is
/// verified with the issuer's key, so a host the section puts under a CRL mode is refused on
/// every connection with a typed reason (`needsValidatedChain`), never let through unchecked;
/// a host it does not name is unaffected. Real TLS on 127.0.0.1 (PinStoreTesting's servers).
@Suite(.serialized) struct CRLHostListHTTPClientTests {
    struct World {
        let pki: TestPKI
        /// A leaf for other.example, a host the section does not name.
        let other: TestIdentity
        let key: TestListSigningKey

        init() throws {
            pki = try TestPKI(hosts: ["localhost"])
            other = try pki.issueLeaf(for: ["other.example"])
            key = try TestListSigningKey()
        }

        /// Pins both leaves; the `crl` section gives localhost `mode`.
        func list(localhost mode: CRLCheckMode) -> TestPinList {
            var list = TestPinList(pinning: [pki.leaf.certificate, other.certificate])
            list.crlModes = ["localhost": mode]
            return list
        }
    }

    static func get(_ client: HTTPClient, host: String, _ server: TestHTTPSServer) async throws -> String {
        let response = try await client.execute(HTTPClientRequest(url: "https://\(host):\(server.port)/"), timeout: .seconds(Int64(HangGuard.seconds)))
        return String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    @Test(.timeLimit(.minutes(10)), arguments: [CRLCheckMode.enforceSoftFail, .enforceHardFail])
    func aHostTheListPutsUnderACRLModeIsRefusedOnEveryConnectionAndNoRequestReachesIt(_ mode: CRLCheckMode) async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(localhost: mode), signedWith: world.key)
        let server = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        defer { Task { try? await lists.shutdown(); try? await server.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, loopbackNames: ["other.example"], trusting: world.pki.root)
        // Twice: each connection is refused on its own (nothing is cached as allowed).
        let failures = try await Pins.using(client) {
            [await #expect(throws: PinningFailure.self) { try await Self.get(client, host: "localhost", server) },
             await #expect(throws: PinningFailure.self) { try await Self.get(client, host: "localhost", server) }]
        }
        for failure in failures {
            #expect(failure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
        }
        #expect(server.requestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostTheListDoesNotNameStillWorks() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(localhost: .enforceSoftFail), signedWith: world.key)
        let server = try await TestHTTPSServer.start(presenting: world.other)
        defer { Task { try? await lists.shutdown(); try? await server.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let client = try Pins.client(store, updateOnMismatch: false, loopbackNames: ["other.example"], trusting: world.pki.root)
        let body = try await Pins.using(client) { try await Self.get(client, host: "other.example", server) }
        #expect(body == TestHTTPSServer.responseBody)
        #expect(server.requestCount == 1)
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostUnderReportOnlyIsAllowedAndTheMissingCheckReported() async throws {
        let world = try World()
        let lists = try await TestListServer.start(serving: world.list(localhost: .reportOnly), signedWith: world.key)
        let server = try await TestHTTPSServer.start(presenting: world.pki.leaf)
        defer { Task { try? await lists.shutdown(); try? await server.shutdown() } }
        let store = try Pins.signedListStore(listURL: lists.listURL, publicKey: world.key.publicKeyBase64)
        #expect(await store.update() == .ok)
        let events = store.decisions()
        let client = try Pins.client(store, updateOnMismatch: false, loopbackNames: ["other.example"], trusting: world.pki.root)
        let body = try await Pins.using(client) { try await Self.get(client, host: "localhost", server) }
        #expect(body == TestHTTPSServer.responseBody)
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.decision.isAllowed == true)
        #expect(event?.decision.reportedFailure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }
}
