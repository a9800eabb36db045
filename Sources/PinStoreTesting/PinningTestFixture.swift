import Foundation
import PinStore

/// Everything a pinning test needs, started in one call: a ``TestPKI`` for the hosts, a
/// throwaway ``TestListSigningKey``, a ``TestListServer`` serving a list that pins the genuine
/// leaf, a ``TestHTTPSServer`` presenting the genuine chain and another presenting the
/// impostor, and a `PinStore` configured against them and already updated.
///
/// ```swift
/// let fixture = try await PinningTestFixture.start()                       // hosts: ["localhost"]
/// let session = URLSession(configuration: .pinned(by: fixture.store, trustRoots: fixture.trustRoots))
/// _ = try await session.data(from: fixture.serverURL)                       // pinned: answered
/// _ = try await session.data(from: fixture.impostorURL)                     // throws URLError
/// try await fixture.shutdown()
/// ```
///
/// ``trustRoots`` trusts both the genuine root and the impostor's CA, as a device trusts a
/// public CA that mis-issues a certificate: the impostor's chain passes the normal trust
/// evaluation, and only pinning refuses it.
public final class PinningTestFixture: Sendable {
    /// The DNS names the leaves carry and the list pins.
    public let hosts: [String]
    /// The certificates: root, intermediate, genuine leaf, impostor.
    public let pki: TestPKI
    /// The key the served lists are signed with; the store holds its public half.
    public let signingKey: TestListSigningKey
    /// The list server the store downloads from.
    public let listServer: TestListServer
    /// The server presenting ``TestPKI/leaf``.
    public let server: TestHTTPSServer
    /// The server presenting ``TestPKI/impostor``.
    public let impostorServer: TestHTTPSServer
    /// The store, configured against ``listServer`` and updated once.
    public let store: PinStore
    /// The folder holding the store's file; removed by ``shutdown()``.
    public let storageDirectory: URL

    /// The anchors to give the pinned client: the genuine root and the impostor's CA.
    public var trustRoots: TrustRoots { .anchors([pki.root, pki.impostorRoot]) }
    /// `https://HOST:PORT/` of ``server``, HOST being the first of ``hosts``.
    public var serverURL: URL { server.url(host: hosts[0]) }
    /// `https://HOST:PORT/` of ``impostorServer``, HOST being the first of ``hosts``.
    public var impostorURL: URL { impostorServer.url(host: hosts[0]) }

    private init(hosts: [String], pki: TestPKI, signingKey: TestListSigningKey, listServer: TestListServer,
                 server: TestHTTPSServer, impostorServer: TestHTTPSServer, store: PinStore, storageDirectory: URL) {
        self.hosts = hosts
        self.pki = pki
        self.signingKey = signingKey
        self.listServer = listServer
        self.server = server
        self.impostorServer = impostorServer
        self.store = store
        self.storageDirectory = storageDirectory
    }

    /// Makes the certificates and the key, starts the three servers, and returns once the store
    /// holds the first list.
    ///
    /// - Parameters:
    ///   - hosts: The DNS names to pin. URL-based clients reach the servers through the first
    ///     one, so it must resolve to 127.0.0.1; `localhost` does everywhere.
    ///   - mode: How the list server answers (and the store reads it).
    ///   - validity: When the leaves are valid.
    ///   - configure: Changes to the store's configuration (policies, enforcement, expected names)
    ///     before the store is made.
    ///   - isolation: The caller's isolation, which `configure` runs in.
    /// - Throws: ``PinStoreTestingError`` when a certificate cannot be made or the first update
    ///   fails, a `PinStoreError` when the configuration is refused, or a server's error.
    public static func start(hosts: [String] = ["localhost"], mode: TestListMode = .staticList,
                             validity: DateInterval = TestPKI.defaultValidity(),
                             configure: (inout PinStore.Configuration) -> Void = { _ in },
                             isolation: isolated (any Actor)? = #isolation) async throws -> PinningTestFixture {
        let pki = try TestPKI(hosts: hosts, validity: validity)
        let signingKey = try TestListSigningKey()
        var started: [@Sendable () async throws -> Void] = []
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-testing-\(UUID().uuidString)")
        do {
            let listServer = try await TestListServer.start(serving: TestPinList(pinning: [pki.leaf.certificate]),
                                                            signedWith: signingKey, mode: mode)
            started.append { try await listServer.shutdown() }
            let server = try await TestHTTPSServer.start(presenting: pki.leaf)
            started.append { try await server.shutdown() }
            let impostorServer = try await TestHTTPSServer.start(presenting: pki.impostor)
            started.append { try await impostorServer.shutdown() }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = PinStore.Configuration(serviceURL: listServer.listURL, publicKey: signingKey.publicKeyBase64,
                                                       useChallenge: mode == .challenge, identifier: "pinstore-testing",
                                                       storageDirectory: directory, requestTimeout: 10,
                                                       requireListSignature: mode == .staticList)
            configure(&configuration)
            let store = try PinStore(configuration: configuration)
            let report = await store.updateWithReport(mode: .forced)
            guard report.result == .ok else {
                throw PinStoreTestingError("The store's first update from the test list server answered \(report.result): \(report.error?.reason ?? "no detail").")
            }
            return PinningTestFixture(hosts: hosts, pki: pki, signingKey: signingKey, listServer: listServer, server: server,
                                      impostorServer: impostorServer, store: store, storageDirectory: directory)
        } catch {
            for stop in started.reversed() { try? await stop() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// Runs `body` with a started fixture and shuts it down afterwards, also when `body` throws.
    /// The parameters are ``start(hosts:mode:validity:configure:isolation:)``'s.
    public static func withFixture<Result>(hosts: [String] = ["localhost"], mode: TestListMode = .staticList,
                                           validity: DateInterval = TestPKI.defaultValidity(),
                                           configure: (inout PinStore.Configuration) -> Void = { _ in },
                                           isolation: isolated (any Actor)? = #isolation,
                                           _ body: (PinningTestFixture) async throws -> Result) async throws -> Result {
        let fixture = try await start(hosts: hosts, mode: mode, validity: validity, configure: configure)
        do {
            let result = try await body(fixture)
            try await fixture.shutdown()
            return result
        } catch {
            try? await fixture.shutdown()
            throw error
        }
    }

    /// Serves `list` from now on and makes the store download it (`update(mode: .forced)`).
    /// Returns the update's result.
    @discardableResult
    public func publish(_ list: TestPinList) async throws(PinStoreError) -> PinStore.UpdateResult {
        try listServer.publish(list)
        return await store.update(mode: .forced)
    }

    /// Publishes a list pinning `certificates` under each of ``hosts`` (a rotation: pin the
    /// renewed leaf, or both leaves during the overlap), and makes the store download it.
    @discardableResult
    public func publish(pinning certificates: [X509Certificate]) async throws(PinStoreError) -> PinStore.UpdateResult {
        try await publish(TestPinList(pinning: certificates, names: hosts))
    }

    /// Stops the three servers and removes the store's folder. Calling it again does nothing
    /// more; the first server error is thrown after every server was asked to stop.
    public func shutdown() async throws {
        var firstError: (any Error)?
        for stop in [listServer.shutdown, server.shutdown, impostorServer.shutdown] {
            do { try await stop() } catch { firstError = firstError ?? error }
        }
        try? FileManager.default.removeItem(at: storageDirectory)
        if let firstError { throw firstError }
    }
}
