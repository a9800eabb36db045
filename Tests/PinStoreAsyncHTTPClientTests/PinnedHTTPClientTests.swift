import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import Testing

/// A pinned `HTTPClient` against real TLS servers on 127.0.0.1 presenting the fixture PKI.
@Suite struct PinnedHTTPClientTests {
    // MARK: - Accepted and refused servers

    @Test func serverPresentingThePinnedCertificateIsAccepted() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]))
        let (response, body) = try await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        #expect(response.status == .ok)
        #expect(body == "hello over a pinned connection")
        #expect(server.requests == ["GET /hello"])
    }

    @Test func impostorWithAValidChainIsRefusedBeforeAnyRequestByte() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]), updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .pinMismatch)
        #expect(failure?.host == "localhost")
        #expect(server.connections >= 1)            // the handshake happened...
        #expect(server.receivedBytes == 0)          // ...and not one request byte followed
    }

    @Test(arguments: [
        (["pki/expired-dnsonly.pem", "pki/intermediate-ca.pem"], "pki/expired-dnsonly.key.pem"),
        (["pki/wrong-host.pem", "pki/intermediate-ca.pem"], "pki/wrong-host.key.pem"),
        (["pki/self-signed-dnsonly.pem"], "pki/self-signed-dnsonly.key.pem"),
    ])
    func defaultVerificationStillRefusesBadChains(chain: [String], key: String) async throws {
        // Every one of these leaves is pinned: only the default verification can refuse them.
        let pins = try chain.prefix(1).map { try Pins.entry($0) } + [Pins.entry("pki/localhost-dnsonly.pem")]
        let server = try await LoopbackHTTPSServer.start(chain: chain, key: key)
        let client = try Pins.client(try Pins.store(pins), updateOnEmpty: false, updateOnMismatch: false)
        let error = await #expect(throws: (any Error).self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(error != nil && !(error is PinningFailure))    // the TLS handshake failed, before the pin check
        #expect(server.receivedBytes == 0)
    }

    @Test func hostPinnedOnlyByIssuerPinsIsRefusedWithItsReason() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(try Pins.store([Pins.entry("pki/intermediate-ca.pem", depth: 1)]))
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .issuerPinsNeedChain)
        #expect(failure?.description.contains("PinStoreNIO") == true)
        #expect(server.receivedBytes == 0)
    }

    @Test func leafValidForSeveralNamesMustBePinnedUnderEveryPinnedName() async throws {
        // localhost-two-names.pem is valid for localhost and alt.pinstore.test. The list pins
        // localhost to it but alt.pinstore.test to another certificate: the chain-aware adapters
        // would accept a request to localhost; this one cannot tell which host the connection is
        // for, so it refuses.
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-two-names-chain.pem"], key: "pki/localhost-two-names.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-two-names.pem"),
                                    Pins.entry("pki/attacker-dnsonly.pem", name: "alt.pinstore.test")])
        let client = try Pins.client(store, updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .pinMismatch)
        #expect(failure?.host == "alt.pinstore.test")
        #expect(server.receivedBytes == 0)
    }

    @Test func hostWithoutPinsIsRefusedAfterOneUpdate() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/api-p256.pem", name: "api.pinstore.test")])
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let store = try Pins.store(serviceURL: list.listURL)
        // A list in force and not due: from here only the refusal can download (otherwise the
        // scheduled download the request starts may or may not be over when the refusal comes).
        #expect(await store.update() == .ok)
        let client = try Pins.client(store)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        await list.shutdown()
        #expect(failure?.reason == .noPinsForHost(updateResult: .ok))
        #expect(list.downloads == 2)
        #expect(server.receivedBytes == 0)
    }

    @Test func refusalReachesTheDecisionStream() async throws {
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        let events = store.decisions()
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let client = try Pins.client(store, updateOnMismatch: false)
        _ = try? await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        var iterator = events.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.decision.failure?.reason == .pinMismatch)
        #expect(event?.host == "localhost")
    }

    @Test func plainHTTPConnectionIsRefused() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]))
        let error = await #expect(throws: PinnedHTTPClientError.self) {
            _ = try await client.execute(HTTPClientRequest(url: list.listURL.absoluteString), timeout: .seconds(10))
        }
        try await client.shutdown()
        await list.shutdown()
        #expect(error?.code == .unencryptedConnection)
        #expect(list.downloads == 0)
    }

    // MARK: - Configuration

    @Test func configurationWithoutCertificateVerificationIsRefused() throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let error = #expect(throws: PinnedHTTPClientError.self) { _ = try HTTPClient.Configuration.pinned(by: try Pins.store(), tlsConfiguration: tls) }
        #expect(error?.code == .certificateVerificationDisabled)
    }

    @Test func configurationWithoutHostnameVerificationIsRefused() throws {
        var configuration = HTTPClient.Configuration(certificateVerification: .noHostnameVerification)
        let error = #expect(throws: PinnedHTTPClientError.self) { try configuration.pin(with: try Pins.store()) }
        #expect(error?.code == .hostnameVerificationDisabled)
    }

    @Test func connectionInitializerAlreadySetStillRunsAfterThePinCheck() async throws {
        let calls = Locked(0)
        var configuration = HTTPClient.Configuration(tlsConfiguration: try Pins.tls())
        configuration.dnsOverride = Pins.loopbackOverride()
        configuration.http1_1ConnectionDebugInitializer = { channel in
            calls.withLock { $0 += 1 }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        try configuration.pin(with: try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]), eventLoopGroup: Pins.group)
        let client = HTTPClient(eventLoopGroup: Pins.group, configuration: configuration)
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let (response, _) = try await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        #expect(response.status == .ok)
        #expect(calls.withLock { $0 } == 1)
    }

    // MARK: - HTTP/2

    @Test func http2ServerIsPinnedTheSameWay() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem", http2: true)
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]))
        let (response, body) = try await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        #expect(response.version == .http2)
        #expect(body == "hello over a pinned connection")
    }

    @Test func http2ImpostorIsRefusedBeforeAnyRequest() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem", http2: true)
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]), updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(failure?.reason == .pinMismatch)
        #expect(server.connections >= 1)
        #expect(server.requests.isEmpty)    // no stream was opened (the HTTP/2 preface carries no request)
    }

    // MARK: - Pool behaviour

    @Test func fiftyConcurrentRequestsShareAFewPinnedConnections() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        let client = try Pins.client(store)
        let statuses = try await withThrowingTaskGroup(of: HTTPResponseStatus.self) { group in
            for _ in 0..<50 {
                group.addTask { try await Pins.get(client, server).0.status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try await client.shutdown()
        await server.shutdown()
        #expect(statuses.count == 50)
        #expect(statuses.allSatisfy { $0 == .ok })
        #expect(server.requests.count == 50)
        #expect(server.connections <= 8)    // AsyncHTTPClient's per-host soft limit: pinned connections are reused
    }

    @Test func listUpdateClosesAnAdmittedConnectionBeforeItCarriesAnotherRequest() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(store)
        let (first, _) = try await Pins.get(client, server)
        #expect(first.status == .ok)
        #expect(server.connections == 1)

        // The next list no longer pins localhost.
        try list.publish([Pins.entry("pki/api-p256.pem", name: "api.pinstore.test")])
        #expect(await store.update(mode: .forced) == .ok)
        #expect(server.connections == 1)
        #expect(await eventually { server.closedConnections == 1 })     // closed by the client, not reused

        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        await list.shutdown()
        #expect(failure?.reason == .noPinsForHost(updateResult: .ok))
        #expect(server.connections == 2)                  // a new connection, refused
        #expect(server.requests == ["GET /hello"])        // the old one carried nothing more
    }

    // MARK: - Rotation drills

    @Test func announcedRotationAcceptsTheNextCertificateAfterAnUpdate() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        let current = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(store)
        #expect(try await Pins.get(client, current).0.status == .ok)

        // The list gains the next certificate before the server switches to it.
        try list.publish([Pins.entry("pki/localhost-dnsonly.pem"), Pins.entry("pki/localhost-next-dnsonly.pem")])
        #expect(await store.update(mode: .forced) == .ok)
        let rotated = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-next-dnsonly-chain.pem"], key: "pki/localhost-next-dnsonly.key.pem")
        let (response, _) = try await Pins.get(client, rotated)
        let stillCurrent = try await Pins.get(client, current).0.status
        try await client.shutdown()
        await current.shutdown()
        await rotated.shutdown()
        await list.shutdown()
        #expect(response.status == .ok)
        #expect(stillCurrent == .ok)
        #expect(list.downloads == 2)    // start-up and the announced update; no refusal-driven download
    }

    @Test func emergencyRotationIsPickedUpByTheFirstRequestToTheNewCertificate() async throws {
        let list = try await MutableListServer.start([Pins.entry("pki/localhost-dnsonly.pem")])
        let store = try Pins.store(serviceURL: list.listURL)
        #expect(await store.update() == .ok)
        // Unannounced: the list now pins only the new certificate, which the store has not seen.
        try list.publish([Pins.entry("pki/localhost-next-dnsonly.pem")])
        let rotated = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-next-dnsonly-chain.pem"], key: "pki/localhost-next-dnsonly.key.pem")
        let old = try await LoopbackHTTPSServer.start(chain: ["pki/localhost-dnsonly-chain.pem"], key: "pki/localhost-dnsonly.key.pem")
        let client = try Pins.client(store)

        let (response, _) = try await Pins.get(client, rotated)        // mismatch -> one update -> allowed
        let downloadsAfterRotation = list.downloads
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, old) }
        let failureAgain = await #expect(throws: PinningFailure.self) { try await Pins.get(client, old) }
        try await client.shutdown()
        await rotated.shutdown()
        await old.shutdown()
        await list.shutdown()
        #expect(response.status == .ok)
        #expect(downloadsAfterRotation == 2)
        #expect(failure?.reason == .pinMismatch)
        #expect(failureAgain?.reason == .pinMismatch)
        #expect(list.downloads <= downloadsAfterRotation + 1)      // the old server causes at most one more download
        #expect(old.receivedBytes == 0)
    }
}
