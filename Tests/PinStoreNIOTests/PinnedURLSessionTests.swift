#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// URLSession on Linux through `URLSessionConfiguration.pinned(by:)`, against real TLS servers
/// on 127.0.0.1 presenting fixture certificates.
@Suite struct PinnedURLSessionTests {
    // A hang guard, not a speed check: a handshake on a machine loaded by a parallel build took
    // longer than 10 s, and one beside a CPU hog longer than 30 s, and a refusal test then saw
    // `.timedOut` instead of the refusal it checks.
    func session(_ store: PinStore, updateOnEmpty: Bool = false, timeout: TimeInterval = HangGuard.seconds) throws -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = timeout
        return URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: updateOnEmpty, basedOn: base))
    }

    /// The URLError a refused request fails with, or nil (and an issue) when it did not fail so.
    func refusal(_ session: URLSession, _ url: String) async -> URLError? {
        do {
            let (_, response) = try await session.data(from: URL(string: url)!)
            Issue.record("expected a refusal, got \(response)")
            return nil
        } catch let error as URLError {
            return error
        } catch {
            Issue.record("expected a URLError, got \(error)")
            return nil
        }
    }

    func pinningFailure(_ error: URLError?) -> PinningFailure? {
        error?.userInfo[NSUnderlyingErrorKey] as? PinningFailure
    }

    @Test func pinnedCertificateSucceedsWithBodyAndHeadersIntact() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let (data, response) = try await session(try Pins.good()).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(http.value(forHTTPHeaderField: "X-Test-Header") == "pinned")
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
    }

    @Test func attackerCertificateIsRefusedAndTheServerReceivesNoRequestBytes() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.good()), "https://localhost:\(server.port)/hello")
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(pinningFailure(error)?.reason == .pinMismatch)
        #expect(server.receivedBytes.withLock { $0 } == 0)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }

    @Test func pinnedButExpiredCertificateIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/expired.pem", "pki/intermediate-ca.pem"], key: "pki/expired.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.pinning("pki/expired.pem")), "https://localhost:\(server.port)/hello")
        #expect(error?.code == .serverCertificateUntrusted)
        guard let chainError = pinningFailure(error)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: error))")
            return
        }
        #expect(chainError.reason == .expired)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func pinnedButWrongHostCertificateIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/wrong-host.pem", "pki/intermediate-ca.pem"], key: "pki/wrong-host.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.pinning("pki/wrong-host.pem")), "https://localhost:\(server.port)/hello")
        guard let chainError = pinningFailure(error)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: error))")
            return
        }
        #expect(chainError.reason == .hostnameMismatch)
    }

    @Test func pinnedButSelfSignedWithoutAnAnchorIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/self-signed.pem"], key: "pki/self-signed.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.pinning("pki/self-signed.pem")), "https://localhost:\(server.port)/hello")
        guard let chainError = pinningFailure(error)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: error))")
            return
        }
        #expect(chainError.reason == .untrustedSelfSigned)
    }

    @Test func intermediatePinnedAtDepthOneIsAccepted() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let store = try Pins.store(fallback: TestResources.fixture("lists/static-depth.json"))
        let (data, _) = try await session(store).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
    }

    @Test func emptyStoreIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.store(fallback: nil)), "https://localhost:\(server.port)/hello")
        #expect(pinningFailure(error)?.reason == .noPinsForHost(updateResult: nil))
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func emptyStoreIsUpdatedThenAcceptedWithUpdateOnEmpty() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        let lists = try await TestServer.plain()
        defer { Task { await server.shutdown(); await lists.shutdown() } }
        let store = try Pins.store(fallback: nil, serviceURL: "http://127.0.0.1:\(lists.port)/list.json")
        // A generous timeout: under a sanitizer on a loaded machine the update and the
        // handshake can take seconds (10 s was seen to run out there).
        let (data, _) = try await session(store, updateOnEmpty: true).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        #expect(lists.requests.withLock { $0 } == ["GET /list.json"])
    }

    @Test func redirectFromPinnedHostToUnpinnedHostIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        // 127.0.0.1 is in the certificate (normal evaluation passes) but has no pin.
        let target = "https://127.0.0.1:\(server.port)/hello"
        let error = await refusal(try session(try Pins.good()), "https://localhost:\(server.port)/redirect?to=\(target)")
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(pinningFailure(error)?.host == "127.0.0.1")
        #expect(pinningFailure(error)?.reason == .noPinsForHost(updateResult: nil))
        #expect(server.requests.withLock { $0 }.count == 1)
    }

    @Test func redirectBetweenPinnedURLsIsFollowed() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let (data, response) = try await session(try Pins.good()).data(from: URL(string: "https://localhost:\(server.port)/redirect?to=/hello")!)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        #expect(response.url?.path == "/hello")
        #expect(server.requests.withLock { $0 }.count == 2)
    }

    @Test func fiftyConcurrentRequestsThroughOneSessionAreAllCorrect() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let url = URL(string: "https://localhost:\(server.port)/hello")!
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask { String(decoding: try await session.data(from: url).0, as: UTF8.self) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 50)
        #expect(bodies.allSatisfy { $0 == "hello over a pinned connection" })
    }

    @Test func plainHTTPIsRefusedRatherThanSentUnpinned() async throws {
        let server = try await TestServer.plain()
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.good()), "http://localhost:\(server.port)/hello")
        #expect(error?.code == .appTransportSecurityRequiresSecureConnection)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func postBodyReachesThePinnedServer() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/echo")!)
        request.httpMethod = "POST"
        request.httpBody = Data("pinned payload".utf8)
        let (data, _) = try await session(try Pins.good()).data(for: request)
        #expect(String(decoding: data, as: UTF8.self) == "POST pinned payload")
    }

    @Test func largeChunkedBodyArrivesIntact() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let (data, _) = try await session(try Pins.good()).data(from: URL(string: "https://localhost:\(server.port)/big")!)
        #expect(data.count == 1 << 20)
        #expect(data.prefix(1024) == Data((0..<1024).map { UInt8($0 % 256) }))
    }

    @Test func silentServerTimesOut() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await refusal(try session(try Pins.good(), timeout: 1), "https://localhost:\(server.port)/slow")
        #expect(error?.code == .timedOut)
    }

    @Test func cancellingATaskStopsIt() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let outcome = Locked<(any Error)?>(nil)
        let done = Locked(false)
        let task = session.dataTask(with: URL(string: "https://localhost:\(server.port)/slow")!) { _, _, error in
            outcome.withLock { $0 = error }
            done.withLock { $0 = true }
        }
        task.resume()
        // Let the request reach the server, then cancel.
        _ = try await pollUntil(every: .milliseconds(20)) { !server.requests.withLock { $0 }.isEmpty }
        task.cancel()
        _ = try await pollUntil(every: .milliseconds(20)) { done.withLock { $0 } }
        #expect((outcome.withLock { $0 } as? URLError)?.code == .cancelled)
    }

    @Test func completionHandlerDataTaskDeliversTheResponse() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let session = try session(try Pins.good())
        let (body, status): (String, Int) = await withCheckedContinuation { continuation in
            session.dataTask(with: URL(string: "https://localhost:\(server.port)/hello")!) { data, response, _ in
                continuation.resume(returning: (String(decoding: data ?? Data(), as: UTF8.self), (response as? HTTPURLResponse)?.statusCode ?? 0))
            }.resume()
        }
        #expect(status == 200)
        #expect(body == "hello over a pinned connection")
    }

    @Test func sessionDelegateReceivesResponseDataAndCompletion() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let delegate = RecordingDelegate()
        let base = URLSessionConfiguration.ephemeral
        let session = URLSession(configuration: .pinned(by: try Pins.good(), trustRoots: try Pins.anchors, basedOn: base),
                                 delegate: delegate, delegateQueue: nil)
        session.dataTask(with: URL(string: "https://localhost:\(server.port)/hello")!).resume()
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.events.withLock { $0.contains("complete") } }
        #expect(delegate.events.withLock { $0 } == ["response 200", "data hello over a pinned connection", "complete"])
    }

    @Test func redirectToPlainHTTPIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        let plain = try await TestServer.plain()
        defer { Task { await server.shutdown(); await plain.shutdown() } }
        let target = "http://localhost:\(plain.port)/hello"
        let error = await refusal(try session(try Pins.good()), "https://localhost:\(server.port)/redirect?to=\(target)")
        #expect(error?.code == .appTransportSecurityRequiresSecureConnection)
        #expect(plain.receivedBytes.withLock { $0 } == 0)
    }
}

/// Records the data-delegate callbacks of one task.
private final class RecordingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `events` is guarded; the delegate has no other state.
    let events = Locked<[String]>([])

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        events.withLock { $0.append("response \((response as? HTTPURLResponse)?.statusCode ?? 0)") }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        events.withLock { $0.append("data " + String(decoding: data, as: UTF8.self)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        events.withLock { $0.append(error == nil ? "complete" : "failed \(String(describing: error))") }
    }
}

@Suite struct PinnedURLSessionOtherSchemesTests {
    @Test func builtInTransportsAreRemovedSoNothingBypassesThePinCheck() throws {
        let configuration = URLSessionConfiguration.pinned(by: try Pins.good())
        let classes = (configuration.protocolClasses ?? []).map { String(reflecting: $0) }
        #expect(classes.count == 1)
        #expect(!classes.contains { $0.hasPrefix("FoundationNetworking.") })
    }

    @Test func webSocketTaskOnAPinnedSessionFailsWithoutContactingTheServer() async throws {
        let server = try await TestServer.plain()
        defer { Task { await server.shutdown() } }
        let session = URLSession(configuration: .pinned(by: try Pins.good()))
        let task = session.webSocketTask(with: URL(string: "ws://127.0.0.1:\(server.port)/socket")!)
        task.resume()
        var failed = false
        do {
            _ = try await task.receive()
        } catch {
            failed = true
        }
        task.cancel()
        #expect(failed)
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.receivedBytes.withLock { $0 } == 0)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }
}

@Suite struct PinnedRedirectHeaderTests {
    static func request() -> URLRequest {
        var request = URLRequest(url: URL(string: "https://api.pinstore.test/a")!)
        request.setValue("secret", forHTTPHeaderField: "X-API-Key")
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        request.setValue("s=1", forHTTPHeaderField: "Cookie")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    @Test func crossOriginRedirectKeepsOnlyContentNegotiationHeaders() {
        let next = RedirectPolicy.nextRequest(after: Self.request(), from: URL(string: "https://api.pinstore.test/a")!,
                                                   to: URL(string: "https://other.pinstore.test/b")!, status: 302)
        #expect(next.allHTTPHeaderFields ?? [:] == ["Accept": "application/json"])
    }

    @Test func sameOriginRedirectKeepsEveryHeader() {
        let next = RedirectPolicy.nextRequest(after: Self.request(), from: URL(string: "https://api.pinstore.test/a")!,
                                                   to: URL(string: "https://api.pinstore.test/b")!, status: 302)
        #expect(next.value(forHTTPHeaderField: "X-API-Key") == "secret")
        #expect(next.value(forHTTPHeaderField: "Authorization") == "Bearer t")
    }
}
#endif
