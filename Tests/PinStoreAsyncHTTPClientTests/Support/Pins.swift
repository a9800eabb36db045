import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreSigning
import PinStoreAsyncHTTPClient
import PinStoreDevServer
import PinStoreTestSupport
import Testing

/// Stores, lists and clients the AsyncHTTPClient tests share.
enum Pins {
    /// The clients' event loop group: NIOPosix's, where AsyncHTTPClient does TLS through
    /// swift-nio-ssl on every platform (its macOS default, NIOTransportServices, cannot be pinned).
    static var group: any EventLoopGroup { MultiThreadedEventLoopGroup.singleton }

    /// Client TLS settings trusting only the test root CA.
    static func tls() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(TestResources.fixturePath("pki/root-ca.pem")))
        return tls
    }

    /// A pin of `certificate` (a PEM fixture) for `name`.
    static func entry(_ certificate: String, name: String = "localhost", depth: Int = 0) throws -> FingerprintEntry {
        FingerprintEntry(name: name, fingerprint: try TestResources.certificate(certificate).fingerprint,
                         expires: 4_102_444_799, depth: depth)   // 2099-12-31, like the fixtures
    }

    /// A store whose only pins are `entries`, shipped as its fallback list (fallback signatures
    /// are not checked); updates go to `serviceURL`.
    /// `useChallenge` says the list at `serviceURL` is served in challenge mode.
    static func store(_ entries: [FingerprintEntry] = [], serviceURL: URL = URL(string: "http://127.0.0.1:1/unused")!,
                      useChallenge: Bool = false, expectedCommonNames: [String]? = nil,
                      exceptions: [TransportSecurityException] = [], policies: [PinPolicy] = [],
                      enforcement: PinStore.Configuration.Enforcement = .enforced) throws -> PinStore {
        let fallback = entries.isEmpty ? nil : try unsignedList(entries)
        var configuration = PinStore.Configuration(
            serviceURL: serviceURL,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            useChallenge: useChallenge,
            expectedCommonNames: expectedCommonNames,
            fallbackData: fallback,
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ahc-\(UUID().uuidString)"),
            requestTimeout: 60,
            policies: policies)
        configuration.transportSecurityExceptions = exceptions
        configuration.enforcement = enforcement
        return try PinStore(configuration: configuration)
    }

    /// A list server on 127.0.0.1 in challenge mode: it answers `entries` with `domainsConfig`
    /// (a JSON object, e.g. `{"sslPinningRequiredForUnlisted": false}`) as the body's first
    /// member, signed over each request's challenge with the fixture list-signing key.
    static func challengeListServer(_ entries: [FingerprintEntry], domainsConfig: String) async throws -> ListServer {
        // 2026-01-01T00:00:00Z, the timestamp of lists/challenge-good.json.
        var body = String(decoding: try FingerprintListSigner.challengeModeBody(entries, timestamp: 1_767_225_600), as: UTF8.self)
        let brace = try #require(body.firstIndex(of: "{"))
        body.replaceSubrange(brace...brace, with: "{\"domainsConfig\": \(domainsConfig), ")
        let key = try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
        return try await ListServer.start(responder: ListResponders.challengeList(body: Data(body.utf8), signingKey: key))
    }

    private static func unsignedList(_ entries: [FingerprintEntry]) throws -> Data {
        let items = entries.map { entry -> [String: Any] in
            ["name": entry.name, "fingerprint": entry.fingerprint.base64EncodedString(), "expires": entry.expires, "depth": entry.depth]
        }
        return try JSONSerialization.data(withJSONObject: ["fingerprints": items])
    }

    /// A store whose pins come only from the signed list at `listURL` (the whole-list
    /// signature required), verified with `publicKey`; its own CRL mode is off.
    static func signedListStore(listURL: URL, publicKey: String) throws -> PinStore {
        var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: publicKey,
                                                   storageDirectory: FileManager.default.temporaryDirectory
                                                       .appendingPathComponent("pinstore-ahc-\(UUID().uuidString)"),
                                                   requestTimeout: 60)
        configuration.requireListSignature = true
        return try PinStore(configuration: configuration)
    }

    /// A pinned client trusting the test root CA (the fixture's, or `root`). `localhost` and
    /// every name in `loopbackNames` resolve to 127.0.0.1, where the test servers listen (IPv4
    /// only): the request still asks for the name, in SNI and in the host-name check.
    static func client(_ store: PinStore, updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                       loopbackNames: [String] = [], trusting root: X509Certificate? = nil) throws -> HTTPClient {
        var tls = try tls()
        if let root {
            tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(root.derRepresentation), format: .der)])
        }
        var configuration = try HTTPClient.Configuration.pinned(by: store, eventLoopGroup: group, tlsConfiguration: tls,
                                                                updateOnEmpty: updateOnEmpty,
                                                                updateOnMismatch: updateOnMismatch)
        configuration.dnsOverride = loopbackOverride(loopbackNames)
        // The pin check (and the list download an unknown host triggers) runs inside the
        // connect: AsyncHTTPClient's 10 s default ran out under AddressSanitizer with every
        // suite running at once on two cores.
        configuration.timeout.connect = .seconds(60)
        let client = HTTPClient(eventLoopGroup: group, configuration: configuration)
        keptAlive.withLock { $0.append(client) }
        return client
    }

    /// Runs `body` with `client`, shutting it down after, whether `body` throws or not.
    static func using<T>(_ client: HTTPClient, _ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// `dnsOverride` sending `localhost` and `names` to 127.0.0.1.
    static func loopbackOverride(_ names: [String] = []) -> [String: String] {
        Dictionary((["localhost"] + names).map { ($0, "127.0.0.1") }, uniquingKeysWith: { first, _ in first })
    }

    /// Every client made here, for the life of the test process: AsyncHTTPClient traps when a
    /// client is deallocated before `shutdown()`, so a test that throws before reaching its
    /// shutdown would otherwise end the whole test run instead of failing alone.
    private static let keptAlive = Locked<[HTTPClient]>([])

    /// GET `path` on `server`, asking for `host` (`localhost` by default), and the body as text.
    static func get(_ client: HTTPClient, _ server: LoopbackHTTPSServer, _ path: String = "/hello",
                    host: String = "localhost") async throws -> (HTTPClientResponse, String) {
        let response = try await client.execute(HTTPClientRequest(url: "https://\(host):\(server.port)" + path), timeout: .seconds(Int64(HangGuard.seconds)))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response, String(buffer: body))
    }
}

/// A list server on 127.0.0.1 serving a signed static list the test can change.
final class MutableListServer: Sendable {
    let server: ListServer
    private let body: Locked<Data>
    private let signer: FingerprintListSigner

    private init(server: ListServer, body: Locked<Data>, signer: FingerprintListSigner) {
        self.server = server
        self.body = body
        self.signer = signer
    }

    /// Starts serving `entries`, signed with the fixture list-signing key.
    static func start(_ entries: [FingerprintEntry]) async throws -> MutableListServer {
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        let body = Locked(try signer.staticList(entries))
        let server = try await ListServer.start(responder: { request in
            ListResponders.staticList(body.withLock { $0 })(request)
        })
        return MutableListServer(server: server, body: body, signer: signer)
    }

    /// Serves `entries` from now on.
    func publish(_ entries: [FingerprintEntry]) throws {
        let list = try signer.staticList(entries)
        body.withLock { $0 = list }
    }

    /// `http://127.0.0.1:PORT/list.json`.
    var listURL: URL { server.baseURL.appendingPathComponent("list.json") }
    /// Lists downloaded so far.
    var downloads: Int { server.requestCount }

    func shutdown() async {
        try? await server.shutdown()
    }
}

/// Waits (up to `seconds`, by default the hang guard) until `condition` holds; returns whether
/// it did. A bound tighter than the guard measures the machine: keep the default.
func eventually(_ seconds: Double = HangGuard.seconds, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

extension Result {
    /// The error of a failure, nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
