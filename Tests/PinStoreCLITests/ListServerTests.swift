import Foundation
import PinStoreTestSupport
import Testing
import PinStore
import PinStoreSigning
import PinStoreDevServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The development list server over real loopback sockets.
struct ListServerTests {
    static let challenge = "AAECAwQFBgcICQoLDA0ODw==" // Base64 of bytes 00..0f, as in Fixtures/lists/challenge.txt

    static func withServer<T>(tls: ListServerTLS? = nil, _ responder: @escaping ListServerResponder,
                              _ body: (ListServer) async throws -> T) async throws -> T {
        let server = try await ListServer.start(tls: tls, responder: responder)
        do {
            let result = try await body(server)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    static func signingKey() throws -> P256PrivateKey {
        try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
    }

    @Test func staticServerServesTheListOverHTTP() async throws {
        let list = try TestResources.fixture("lists/static-good.json")
        let response = try await Self.withServer(ListResponders.staticList(list)) { server in
            try await HTTPTestClient.get(server.baseURL.appendingPathComponent("list.json"))
        }
        #expect(response.status == 200)
        #expect(response.body == list)
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test func serverListensOnLoopbackWithAnEphemeralPort() async throws {
        try await Self.withServer(ListResponders.staticList(Data())) { server in
            #expect(server.port > 0)
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
        }
    }

    @Test func shuttingDownTwiceIsHarmless() async throws {
        let server = try await ListServer.start(responder: ListResponders.staticList(Data()))
        try await server.shutdown()
        try await server.shutdown()
    }

    @Test func serverStopsAcceptingConnectionsAfterShutdown() async throws {
        let server = try await ListServer.start(responder: ListResponders.staticList(Data("{}".utf8)))
        let url = server.baseURL
        try await server.shutdown()
        await #expect(throws: (any Error).self) {
            try await HTTPTestClient.get(url, timeout: 5)
        }
    }

    @Test func serverCountsRequests() async throws {
        let count = try await Self.withServer(ListResponders.staticList(Data("{}".utf8))) { server in
            for _ in 0..<3 { _ = try await HTTPTestClient.get(server.baseURL) }
            return server.requestCount
        }
        #expect(count == 3)
    }

    @Test func responderSeesMethodPathAndHeaders() async throws {
        let response = try await Self.withServer({ request in
            let echo = "\(request.method) \(request.uri) \(request.header("x-probe") ?? "-")"
            return ListServerResponse(status: 201, body: Data(echo.utf8))
        }) { server in
            try await HTTPTestClient.get(server.baseURL.appendingPathComponent("pins/list.json"), headers: ["X-Probe": "42"])
        }
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == "GET /pins/list.json 42")
    }

    @Test func delayedResponseArrivesAfterItsDelay() async throws {
        let started = Date()
        let response = try await Self.withServer({ _ in ListServerResponse(body: Data("late".utf8), delay: 1) }) { server in
            try await HTTPTestClient.get(server.baseURL)
        }
        #expect(Date().timeIntervalSince(started) >= 0.95)
        #expect(response.body == Data("late".utf8))
    }

    @Test func challengeServerSignsTheClientsChallenge() async throws {
        let body = try TestResources.fixture("lists/challenge-good.json")
        let response = try await Self.withServer(ListResponders.challengeList(body: body, signingKey: Self.signingKey())) { server in
            try await HTTPTestClient.get(server.baseURL, headers: ["X-Cert-Pinning-Challenge": Self.challenge])
        }
        #expect(response.status == 200)
        #expect(response.body == body)
        let signature = try #require(response.header("X-Cert-Pinning-Signature").flatMap { Data(base64Encoded: $0) })
        let publicKey = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        #expect(publicKey.isValidSignature(signature, for: Data((Self.challenge + "&").utf8) + body))
    }

    @Test func challengeServerReadsTheHeaderCaseInsensitively() async throws {
        let body = try TestResources.fixture("lists/challenge-good.json")
        let response = try await Self.withServer(ListResponders.challengeList(body: body, signingKey: Self.signingKey())) { server in
            try await HTTPTestClient.get(server.baseURL, headers: ["x-cert-pinning-challenge": Self.challenge])
        }
        #expect(response.status == 200)
    }

    @Test func challengeServerRefusesARequestWithoutChallenge() async throws {
        let response = try await Self.withServer(ListResponders.challengeList(body: Data("{}".utf8), signingKey: Self.signingKey())) { server in
            try await HTTPTestClient.get(server.baseURL)
        }
        #expect(response.status == 400)
        #expect(response.header("X-Cert-Pinning-Signature") == nil)
    }

    @Test(arguments: [
        "AAECAwQFBgcICQoLDA0O",                               // 15 bytes: too short
        Data(repeating: 9, count: 33).base64EncodedString(),  // 33 bytes: too long
        "not base64!",
    ])
    func challengeServerRefusesAMalformedChallenge(challenge: String) async throws {
        let responder = ListResponders.challengeList(body: Data("{}".utf8), signingKey: try Self.signingKey())
        let response = responder(ListServerRequest(headers: [("X-Cert-Pinning-Challenge", challenge)]))
        #expect(response.status == 400)
    }

    @Test func challengeServerAcceptsThirtyTwoByteChallenges() throws {
        let challenge = Data(repeating: 9, count: 32).base64EncodedString()
        let responder = ListResponders.challengeList(body: Data("{}".utf8), signingKey: try Self.signingKey())
        #expect(responder(ListServerRequest(headers: [("X-Cert-Pinning-Challenge", challenge)])).status == 200)
    }

    @Test func requestHeaderLookupIgnoresCase() {
        let request = ListServerRequest(headers: [("X-Cert-Pinning-Challenge", "abc")])
        #expect(request.header("x-cert-pinning-challenge") == "abc")
        #expect(request.header("X-Other") == nil)
    }

    @Test func tlsServerPresentsTheConfiguredChain() async throws {
        let tls = try ListServerTLS(certificateChainFile: TestResources.fixturePath("pki/localhost-chain.pem"),
                                    privateKeyFile: TestResources.fixturePath("pki/localhost.key.pem"))
        let output = try await Self.withServer(tls: tls, ListResponders.staticList(Data("{}".utf8))) { server in
            #expect(server.baseURL.scheme == "https")
            return try await OpenSSLCommand.run(["s_client", "-connect", "127.0.0.1:\(server.port)", "-showcerts"], input: Data())
        }
        let presented = try X509Certificate.certificates(pem: output.stdout)
        let expected = try X509Certificate.certificates(pem: TestResources.fixtureText("pki/localhost-chain.pem"))
        #expect(presented.map(\.fingerprint) == expected.map(\.fingerprint))
    }

    @Test func tlsWithAMissingKeyFileFailsWithAClearError() {
        #expect(throws: ListServerError.self) {
            try ListServerTLS(certificateChainFile: TestResources.fixturePath("pki/localhost-chain.pem"),
                              privateKeyFile: "/nonexistent/key.pem")
        }
    }
}
