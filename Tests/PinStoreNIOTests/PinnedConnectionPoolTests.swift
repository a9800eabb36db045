#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// The pinned transport as an HTTP client: keep-alive pool, pins following the list, streaming,
/// downloads and uploads, and URLSession's behaviour, against real TLS servers on 127.0.0.1.
@Suite struct PinnedConnectionPoolTests {
    static func localhostServer(compressing: Bool = false) async throws -> TestServer {
        try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem", compressing: compressing)
    }

    // A hang guard, not a speed check: on a loaded machine a handshake took longer than 10 s,
    // then 30 s beside a CPU hog, and refusal tests saw `.timedOut`.
    func configuration(timeout: TimeInterval = HangGuard.seconds, _ change: (URLSessionConfiguration) -> Void = { _ in }) -> URLSessionConfiguration {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = timeout
        change(base)
        return base
    }

    func session(_ store: PinStore, _ base: URLSessionConfiguration? = nil, delegate: (any URLSessionDelegate)? = nil) throws -> URLSession {
        URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, basedOn: base ?? configuration()),
                   delegate: delegate, delegateQueue: nil)
    }

    func text(_ session: URLSession, _ url: String) async throws -> String {
        String(decoding: try await session.data(from: URL(string: url)!).0, as: UTF8.self)
    }

    // MARK: Pool

    @Test func sequentialRequestsShareOneConnection() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        for _ in 0..<5 {
            #expect(try await text(session, "https://localhost:\(server.port)/hello") == "hello over a pinned connection")
        }
        #expect(server.connectionCount == 1)
        #expect(server.requests.withLock { $0 }.count == 5)
    }

    @Test func idempotentRequestOnAConnectionTheServerClosedIsRetriedOnceOnAFreshOne() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        #expect(try await text(session, "https://localhost:\(server.port)/drop-if-reused") == "hello over a pinned connection")
        #expect(server.connectionCount == 2)
    }

    @Test func postOnAConnectionTheServerClosedIsNotRetried() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/drop-if-reused")!)
        request.httpMethod = "POST"
        request.httpBody = Data("once".utf8)
        await #expect(throws: URLError.self) { _ = try await session.data(for: request) }
        #expect(server.connectionCount == 1)
    }

    @Test func connectionsPerHostStayWithinTheConfiguredLimit() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good(), configuration { $0.httpMaximumConnectionsPerHost = 2 })
        let url = "https://localhost:\(server.port)/drip?bytes=3&ms=20"
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<12 { group.addTask { try await text(session, url) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies == Array(repeating: "xxx", count: 12))
        #expect(server.connectionCount <= 2)
    }

    @Test func connectionCloseResponseIsNotReused() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        #expect(try await text(session, "https://localhost:\(server.port)/close") == "closing")
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        #expect(server.connectionCount == 2)
    }

    @Test func http10ResponseIsNotReused() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        #expect(try await text(session, "https://localhost:\(server.port)/http10") == "one-point-oh")
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        #expect(server.connectionCount == 2)
    }

    @Test func redirectsAcrossHostsUsePooledConnectionsCheckedForTheirOwnHost() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        // Both names are in the certificate; each has its own pin entry.
        let fingerprint = try TestResources.certificate("pki/localhost.pem").fingerprintBase64
        let list = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799},{"name":"127.0.0.1","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#
        let session = try session(try Pins.store(fallback: Data(list.utf8)))
        let url = "https://localhost:\(server.port)/redirect?to=https://127.0.0.1:\(server.port)/hello"
        for _ in 0..<3 {
            #expect(try await text(session, url) == "hello over a pinned connection")
        }
        #expect(server.connectionCount == 2)
        #expect(server.requests.withLock { $0 }.count == 6)
    }

    @Test func delegateIsAskedBeforeEachRedirectIsFollowed() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let delegate = RedirectRecorder(follow: true)
        let session = try session(try Pins.good(), delegate: delegate)
        #expect(try await text(session, "https://localhost:\(server.port)/redirect?to=/hello") == "hello over a pinned connection")
        #expect(delegate.asked.withLock { $0 } == ["302 -> https://localhost:\(server.port)/hello"])
    }

    @Test func delegateThatDeclinesARedirectReceivesTheRedirectResponse() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good(), delegate: RedirectRecorder(follow: false))
        let (_, response) = try await session.data(from: URL(string: "https://localhost:\(server.port)/redirect?to=/hello")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 302)
        #expect(server.requests.withLock { $0 }.count == 1)
    }

    // MARK: HTTP/2

    static func http2Server() async throws -> TestServer {
        try await TestServer.http2(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
    }

    @Test func http2ServerCarriesConcurrentRequestsOnOneConnection() async throws {
        let server = try await Self.http2Server()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let url = "https://localhost:\(server.port)/hello"
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await text(session, url) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies == Array(repeating: "hello over a pinned connection", count: 20))
        #expect(server.connectionCount == 1)
        #expect(server.requests.withLock { $0 }.count == 20)
    }

    @Test func http2RefusedServerReceivesNoRequestBytes() async throws {
        let server = try await TestServer.http2(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: URLError.self) { _ = try await text(try session(try Pins.good()), "https://localhost:\(server.port)/hello") }
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func http2BodyStreamsToADelegateAndPostsCarryTheirBody() async throws {
        let server = try await Self.http2Server()
        defer { Task { await server.shutdown() } }
        let delegate = CountingDelegate(delayPerPiece: .zero)
        let session = try session(try Pins.good(), delegate: delegate)
        session.dataTask(with: URL(string: "https://localhost:\(server.port)/stream?mib=2")!).resume()
        // Waits for the event (5 s, then 30 s, were not always enough on a loaded machine).
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.counts.withLock { $0.completed } }
        #expect(delegate.counts.withLock { $0.bytes } == 2 << 20)
        #expect(delegate.counts.withLock { $0.completion } == nil)
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/echo")!)
        request.httpMethod = "POST"
        request.httpBody = Data("over h2".utf8)
        let (data, _) = try await session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "POST over h2")
        #expect(server.connectionCount == 1)
    }

    @Test func http2ConnectionIsNotReusedAfterTheListStopsPinningIt() async throws {
        let server = try await Self.http2Server()
        defer { Task { await server.shutdown() } }
        let (store, fetcher, directory) = try Self.storeWithStub()
        defer { try? FileManager.default.removeItem(at: directory) }
        fetcher.body.withLock { $0 = try? Self.list(pinning: "pki/localhost.pem") }
        #expect(await store.update(mode: .forced) == .ok)
        let session = try session(store)
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        fetcher.body.withLock { $0 = try? Self.list(pinning: "pki/rogue-leaf.pem") }
        #expect(await store.update(mode: .forced) == .ok)
        await #expect(throws: URLError.self) { _ = try await text(session, "https://localhost:\(server.port)/hello") }
        #expect(server.requests.withLock { $0 }.count == 1)
    }

    /// A store without fallback pins whose downloads come from a settable stub.
    fileprivate static func storeWithStub() throws -> (PinStore, ListStub, URL) {
        let fetcher = ListStub()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-pool-\(UUID().uuidString)")
        let store = try PinStore(configuration: .init(
            serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: directory, requestTimeout: HangGuard.seconds), fetcher: fetcher)
        return (store, fetcher, directory)
    }

    /// A signed list pinning `certificate` (a PEM fixture) for localhost.
    static func list(pinning certificate: String) throws -> Data {
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        let der = try TestResources.certificate(certificate).derRepresentation
        return try signer.staticList([FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(der), expires: 4102444799)])
    }

    // MARK: Pins follow the list

    @Test func pooledConnectionIsNotReusedAfterTheListStopsPinningIt() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let fetcher = ListStub()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-pool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // No fallback: fallback pins always stay in force.
        let store = try PinStore(configuration: .init(
            serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: directory, requestTimeout: HangGuard.seconds), fetcher: fetcher)
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        func list(pinning certificate: String) throws -> Data {
            let der = try TestResources.certificate(certificate).derRepresentation
            return try signer.staticList([FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(der), expires: 4102444799)])
        }
        fetcher.body.withLock { $0 = try? list(pinning: "pki/localhost.pem") }
        #expect(await store.update(mode: .forced) == .ok)
        let session = try session(store)
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        #expect(server.connectionCount == 1)

        // The new list pins localhost to another certificate: the pooled connection, admitted
        // under the old list, must not carry the next request.
        fetcher.body.withLock { $0 = try? list(pinning: "pki/rogue-leaf.pem") }
        #expect(await store.update(mode: .forced) == .ok)

        let error = await #expect(throws: URLError.self) { _ = try await session.data(from: URL(string: "https://localhost:\(server.port)/hello")!) }
        #expect((error?.userInfo[NSUnderlyingErrorKey] as? PinningFailure)?.reason == .pinMismatch)
        #expect(server.requests.withLock { $0 }.count == 1)
        #expect(server.connectionCount == 2)
    }

    // MARK: Streaming

    @Test func delegateReceivesTheBodyInPiecesAndASlowConsumerHoldsTheServerBack() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let delegate = CountingDelegate(delayPerPiece: .milliseconds(2))
        let session = try session(try Pins.good(), delegate: delegate)
        let task = session.dataTask(with: URL(string: "https://localhost:\(server.port)/stream?mib=0")!)
        task.resume()
        // Waits until the delegate has taken a few pieces (a busy machine may take a while to
        // get there), then lets the stream run on: without backpressure the server would race
        // ahead meanwhile.
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.counts.withLock { $0.pieces } >= 3 }
        try await Task.sleep(for: .seconds(1))
        let (pieces, consumed) = delegate.counts.withLock { ($0.pieces, $0.bytes) }
        let sent = server.streamedBytes.withLock { $0 }
        task.cancel()
        #expect(pieces > 1)
        #expect(consumed > 0)
        // Without backpressure loopback would have carried hundreds of MiB by now. What may be
        // ahead: our 4 MiB high-water mark plus the socket buffers of both ends.
        #expect(sent - consumed < 24 << 20, "server sent \(sent) bytes, the delegate consumed \(consumed)")
    }

    @Test func completionHandlerStillGetsTheWholeBody() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good(), delegate: CountingDelegate(delayPerPiece: .zero))
        let (data, _) = try await session.data(from: URL(string: "https://localhost:\(server.port)/stream?mib=3")!)
        #expect(data.count == 3 << 20)
    }

    @Test func cancellingMidBodyEndsTheTaskAndDropsTheConnection() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let delegate = CountingDelegate(delayPerPiece: .zero)
        let session = try session(try Pins.good(), delegate: delegate)
        let task = session.dataTask(with: URL(string: "https://localhost:\(server.port)/stall")!)
        task.resume()
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.counts.withLock { $0.bytes } > 0 }
        #expect(delegate.counts.withLock { $0.bytes } == 1024)
        task.cancel()
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.counts.withLock { $0.completion } != nil }
        #expect((delegate.counts.withLock { $0.completion } as? URLError)?.code == .cancelled)
        _ = try await text(session, "https://localhost:\(server.port)/hello")
        #expect(server.connectionCount == 2)
    }

    // MARK: Downloads and uploads

    @Test func downloadFailsAtOnceWithAClearErrorInsteadOfTrapping() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let error = await #expect(throws: URLError.self) { _ = try await session.download(from: URL(string: "https://localhost:\(server.port)/hello")!) }
        #expect(error?.code == .unsupportedURL)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }

    @Test func downloadTaskReportsTheFailureToItsDelegate() async throws {
        let delegate = CountingDelegate(delayPerPiece: .zero)
        let session = try session(try Pins.good(), delegate: delegate)
        session.downloadTask(with: URL(string: "https://localhost:1/hello")!).resume()
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.counts.withLock { $0.completion } != nil }
        #expect((delegate.counts.withLock { $0.completion } as? URLError)?.code == .unsupportedURL)
    }

    @Test func uploadFromDataSendsTheBody() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/echo")!)
        request.httpMethod = "PUT"
        let (data, _) = try await session(try Pins.good()).upload(for: request, from: Data("uploaded bytes".utf8))
        #expect(String(decoding: data, as: UTF8.self) == "PUT uploaded bytes")
    }

    @Test func uploadFromFileSendsTheFile() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-upload-\(UUID().uuidString)")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/echo")!)
        request.httpMethod = "POST"
        let (data, _) = try await session(try Pins.good()).upload(for: request, fromFile: file)
        #expect(String(decoding: data, as: UTF8.self) == "POST from a file")
    }

    // MARK: Behaving like URLSession

    @Test func gzipResponsesAreDecoded() async throws {
        let server = try await Self.localhostServer(compressing: true)
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let (data, response) = try await session.data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") != nil)
    }

    @Test func acceptEncodingIsSentUnlessTheRequestSetsItsOwn() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        #expect(try await text(session, "https://localhost:\(server.port)/headers").contains("accept-encoding: deflate, gzip"))
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/headers")!)
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let (data, _) = try await session.data(for: request)
        #expect(String(decoding: data, as: UTF8.self).contains("accept-encoding: identity"))
    }

    @Test func additionalHeadersOfTheSessionConfigurationAreSent() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        // Set after `.pinned(...)`: the session's own configuration counts.
        let configuration = URLSessionConfiguration.pinned(by: try Pins.good(), trustRoots: try Pins.anchors, basedOn: configuration())
        configuration.httpAdditionalHeaders = ["X-Client": "pinned-tests"]
        let session = URLSession(configuration: configuration)
        #expect(try await text(session, "https://localhost:\(server.port)/headers").contains("x-client: pinned-tests"))
    }

    @Test func cookiesAreStoredAndSentBack() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let storage = HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: "pinstore-\(UUID().uuidString)")
        let session = try session(try Pins.good(), configuration {
            $0.httpCookieStorage = storage
            $0.httpShouldSetCookies = true
            $0.httpCookieAcceptPolicy = .always
        })
        _ = try await text(session, "https://localhost:\(server.port)/cookie?set=session=abc")
        #expect(try await text(session, "https://localhost:\(server.port)/headers").contains("cookie: session=abc"))
    }

    @Test func resourceTimeoutEndsADripFeedingServer() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        // One byte every 500 ms: the request timeout (the hang guard) never fires, and the whole
        // would take 5 minutes and then succeed. Only the 1.5 s resource timeout can end it with
        // `.timedOut` first, however late a loaded machine runs it (a bound on the elapsed time
        // measured the machine; a broken resource timeout shows as a success).
        let session = try session(try Pins.good(), configuration { $0.timeoutIntervalForResource = 1.5 })
        let error = await #expect(throws: URLError.self) { _ = try await text(session, "https://localhost:\(server.port)/drip?bytes=600&ms=500") }
        #expect(error?.code == .timedOut)
    }

    @Test func hostHeaderNamingAnotherHostIsRefused() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/hello")!)
        request.setValue("evil.example", forHTTPHeaderField: "Host")
        let error = await #expect(throws: URLError.self) { _ = try await session(try Pins.good()).data(for: request) }
        #expect(error?.code == .badURL)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func internationalizedHostIsUsedInItsASCIIForm() throws {
        let target = try PinnedHTTPSTransport.target(of: URL(string: "https://bücher.example/x?y=1")!)
        #expect(target.key.host.text == "xn--bcher-kva.example")
        #expect(target.hostHeader == "xn--bcher-kva.example")
        #expect(target.uri == "/x?y=1")
    }

    @Test func poolKeyIsTheNormalizedHost() throws {
        let plain = try PinnedHTTPSTransport.target(of: URL(string: "https://api.example.com:8443/a")!)
        let written = try PinnedHTTPSTransport.target(of: URL(string: "https://API.Example.com.:8443/b")!)
        #expect(written.key == plain.key)
        #expect(written.key.host.text == "api.example.com")
        let bracketed = try PinnedHTTPSTransport.target(of: URL(string: "https://[0:0::1]:8443/")!)
        #expect(bracketed.key.host.text == "::1")
        #expect(bracketed.key == PinnedConnectionPool.Key(host: try HostName("::1"), port: 8443))
    }

    @Test func hostWrittenTwoWaysSharesOnePooledConnection() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        #expect(try await text(session, "https://localhost:\(server.port)/hello") == "hello over a pinned connection")
        #expect(try await text(session, "https://LOCALHOST.:\(server.port)/hello") == "hello over a pinned connection")
        #expect(server.connectionCount == 1)
        #expect(server.requests.withLock { $0 }.count == 2)
    }

    @Test func manyConcurrentTasksOfEveryKindCompleteWithoutCrashing() async throws {
        let server = try await Self.localhostServer()
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good(), configuration())
        let url = URL(string: "https://localhost:\(server.port)/hello")!
        // corelibs' client reads the session's task registry; from any thread but the task's
        // work queue that races with tasks being added and removed (the SIGSEGV seen under load).
        // Many short tasks of both kinds keep the registry changing all the time.
        let completed = try await withThrowingTaskGroup(of: Int.self) { group in
            var results: [Int] = []
            for index in 0..<2_000 {
                if index >= 64 { results.append(try await group.next() ?? -1) }
                group.addTask {
                    if index % 2 == 0 {
                        return try await session.data(from: url).0.count
                    }
                    return await withCheckedContinuation { continuation in
                        session.dataTask(with: url) { data, _, _ in continuation.resume(returning: data?.count ?? -1) }.resume()
                    }
                }
            }
            return try await group.reduce(into: results) { $0.append($1) }
        }
        #expect(completed.count == 2_000)
        #expect(completed.allSatisfy { $0 == 30 })
    }
}

/// Records the redirects it is asked about; follows them or not.
private final class RedirectRecorder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked: `asked` is locked; `follow` is immutable.
    let follow: Bool
    let asked = Locked<[String]>([])

    init(follow: Bool) { self.follow = follow }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        asked.withLock { $0.append("\(response.statusCode) -> \(request.url?.absoluteString ?? "?")") }
        completionHandler(follow ? request : nil)
    }
}

/// Serves whatever list body a test sets.
private final class ListStub: FingerprintListFetcher {
    let body = Locked<Data?>(nil)

    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        guard let body = body.withLock({ $0 }) else {
            return FingerprintListResponse(statusCode: 404, headers: [:], body: Data())
        }
        return FingerprintListResponse(statusCode: 200, headers: ["content-type": "application/json"], body: body)
    }
}

/// Counts what a data delegate receives, optionally taking its time over each piece.
private final class CountingDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    // @unchecked: `counts` is locked; `delayPerPiece` is immutable.
    struct Counts {
        var pieces = 0
        var bytes = 0
        var completion: (any Error)?
        var completed = false
    }

    let counts = Locked(Counts())
    let delayPerPiece: Duration

    init(delayPerPiece: Duration) {
        self.delayPerPiece = delayPerPiece
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if delayPerPiece > .zero {
            Thread.sleep(forTimeInterval: Double(delayPerPiece.components.attoseconds) / 1e18 + Double(delayPerPiece.components.seconds))
        }
        counts.withLock {
            $0.pieces += 1
            $0.bytes += data.count
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {}

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        counts.withLock {
            $0.completion = error
            $0.completed = true
        }
    }
}
#endif
