import AsyncHTTPClient
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import PinStore
import NIOSSL
import PinStoreAsyncHTTPClient
import PinStoreTesting
import Testing

/// The README's swift-openapi-async-http-client example, compiled and run: a generated client
/// takes any `ClientTransport`; built on the pinned `HTTPClient`, every call it makes is pinned.
/// Against the test kit's servers (`PinStoreTesting`), as a user's own test would be.
@Suite struct OpenAPITransportTests {
    /// What swift-openapi-generator makes of a one-operation document (`GET /hello`), reduced to
    /// the part that matters here: the client only ever talks through its transport.
    struct HelloClient {
        let serverURL: URL
        let transport: any ClientTransport

        func getHello() async throws -> String {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hello")
            let (response, body) = try await transport.send(request, body: nil, baseURL: serverURL, operationID: "getHello")
            guard response.status == .ok, let body else { throw UnexpectedResponse(status: response.status.code) }
            return try await String(collecting: body, upTo: 1 << 20)
        }

        struct UnexpectedResponse: Error { let status: Int }
    }

    /// A pinned client for the fixture's hosts, trusting the fixture's roots, with every host
    /// name resolved to 127.0.0.1 (AsyncHTTPClient's `dnsOverride`), so the servers are reached
    /// under the name the list pins.
    static func pinnedClient(_ fixture: PinningTestFixture, updateOnMismatch: Bool = true) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try [fixture.pki.root, fixture.pki.impostorRoot].map {
            try NIOSSLCertificate(bytes: Array($0.derRepresentation), format: .der)
        })
        var configuration = try HTTPClient.Configuration.pinned(by: fixture.store, eventLoopGroup: Pins.group, tlsConfiguration: tls,
                                                                updateOnMismatch: updateOnMismatch)
        configuration.dnsOverride = Dictionary(uniqueKeysWithValues: fixture.hosts.map { ($0, "127.0.0.1") })
        return HTTPClient(eventLoopGroup: Pins.group, configuration: configuration)
    }

    @Test func generatedClientOnThePinnedTransportReachesThePinnedServer() async throws {
        let text = try await PinningTestFixture.withFixture(hosts: ["api.example.test"]) { fixture in
            let pinnedClient = try Self.pinnedClient(fixture)
            let client = HelloClient(serverURL: fixture.serverURL,
                                     transport: AsyncHTTPClientTransport(configuration: .init(client: pinnedClient)))
            return try await Pins.using(pinnedClient) { try await client.getHello() }
        }
        #expect(text == TestHTTPSServer.responseBody)
    }

    @Test func generatedClientOnThePinnedTransportIsRefusedByAnImpostor() async throws {
        try await PinningTestFixture.withFixture(hosts: ["api.example.test"]) { fixture in
            let pinnedClient = try Self.pinnedClient(fixture, updateOnMismatch: false)
            let client = HelloClient(serverURL: fixture.impostorURL,
                                     transport: AsyncHTTPClientTransport(configuration: .init(client: pinnedClient)))
            // (A generated client wraps it in OpenAPIRuntime's ClientError, as `underlyingError`.)
            let failure = try await Pins.using(pinnedClient) {
                await #expect(throws: PinningFailure.self) { try await client.getHello() }
            }
            #expect(failure?.reason == .pinMismatch)
            #expect(fixture.impostorServer.requestCount == 0)
        }
    }

    /// A generated client reports a transport error as OpenAPIRuntime's `ClientError`, with the
    /// refusal as its `underlyingError`: `PinningFailure(unwrapping:)` finds it there.
    @Test func thePinningFailureIsFoundInsideAnOpenAPIClientError() async throws {
        let server = try await LoopbackHTTPSServer.start(chain: ["pki/attacker-dnsonly-chain.pem"], key: "pki/attacker-dnsonly.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")])
        var configuration = try HTTPClient.Configuration.pinned(by: store, eventLoopGroup: Pins.group, tlsConfiguration: Pins.tls(),
                                                                updateOnMismatch: false)
        configuration.dnsOverride = Pins.loopbackOverride()
        let pinnedClient = HTTPClient(eventLoopGroup: Pins.group, configuration: configuration)
        let client = HelloClient(serverURL: URL(string: server.baseURL)!,
                                 transport: AsyncHTTPClientTransport(configuration: .init(client: pinnedClient)))
        var thrown: (any Error)?
        do { _ = try await client.getHello() } catch { thrown = error }
        try await pinnedClient.shutdown()
        await server.shutdown()
        let underlying = try #require(thrown)
        let wrapped = ClientError(operationID: "getHello", operationInput: "", causeDescription: "Transport threw an error.",
                                  underlyingError: underlying)
        #expect(PinningFailure(unwrapping: wrapped)?.reason == .pinMismatch)
        #expect(PinningFailure(unwrapping: HelloClient.UnexpectedResponse(status: 500)) == nil)
    }
}

/// The lines the article "What the pinned client checks" shows for OpenAPI clients, word for
/// word (scripts/check-doc-examples.sh checks them): compiled here, where
/// swift-openapi-async-http-client is a dependency, and never called (the tests above run the
/// same construction against loopback servers). `Client` and `Servers` stand in for what
/// swift-openapi-generator generates.
enum OpenAPIArticleExample {
    struct Client {
        let serverURL: URL
        let transport: any ClientTransport
    }

    enum Servers {
        enum Server1 {
            static func url() throws -> URL { URL(string: "https://api.example.com/v1")! }
        }
    }

    static func makeClient(store: PinStore) throws -> (Client, HTTPClient) {
        let pinnedClient = try HTTPClient(pinnedBy: store)
        let api = Client(serverURL: try Servers.Server1.url(),
                         transport: AsyncHTTPClientTransport(configuration: .init(client: pinnedClient)))
        return (api, pinnedClient)
    }
}
