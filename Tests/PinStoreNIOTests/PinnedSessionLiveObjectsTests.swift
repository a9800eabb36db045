#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A pinned URLSession keeps nothing of a request once it has ended, however it ended (issue 37:
/// a reference cycle kept every request, its response and its body, about 6.5 KB each). Each
/// test makes requests through a real loopback server, then counts the transport's live
/// per-request objects (``LiveRequestObjects``) and its registries: every count must come back
/// to zero. Nothing is timed; the wait only gives event loops and work queues the moment they
/// take to drop their last reference, and ends as soon as the counts are zero.
@Suite struct PinnedSessionLiveObjectsTests {
    /// Requests a test makes after its warm-up: a leak of one object per request shows as this many.
    static let rounds = 20

    struct Subject {
        let session: URLSession
        let transport: PinnedHTTPSTransport
    }

    /// A pinned session of its own (a new store, so a transport no other test shares).
    func subject(store: PinStore? = nil, delegate: (any URLSessionDelegate)? = nil,
                 configure: (URLSessionConfiguration) -> Void = { _ in }) throws -> Subject {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        configure(base)
        let configuration = URLSessionConfiguration.pinned(by: try store ?? Pins.good(), trustRoots: try Pins.anchors, basedOn: base)
        let transport = try #require(PinnedSessionRegistry.transport(of: configuration))
        return Subject(session: URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil), transport: transport)
    }

    /// Waits until `transport` holds nothing for any request (bounded), then expects exactly that.
    func expectNothingAlive(in transport: PinnedHTTPSTransport, sourceLocation: SourceLocation = #_sourceLocation) async {
        func held() -> [String: Int] {
            var held: [String: Int] = [:]
            for (kind, count) in transport.liveObjects.alive { held["\(kind)"] = count }
            if transport.deadlineTimer.pendingCount > 0 { held["pending resource deadlines"] = transport.deadlineTimer.pendingCount }
            if transport.bodyBudget.inUse > 0 { held["buffered body bytes"] = transport.bodyBudget.inUse }
            let pool = transport.pool.heldRequestCount
            if pool.waiting > 0 { held["requests waiting in the pool"] = pool.waiting }
            if pool.undeliveredFailures > 0 { held["undelivered connection failures"] = pool.undeliveredFailures }
            return held
        }
        // Only ever waits when something is left behind; ``HangGuard`` ends the wait for a leak
        // (30 s passed on a machine busy with builds with nothing leaked).
        _ = try? await pollUntil(every: .milliseconds(20)) { held().isEmpty }
        let now = held()
        #expect(now == [:], "left alive after \(Self.rounds) requests ended", sourceLocation: sourceLocation)
    }

    /// Runs `request` once to warm up, then ``rounds`` times, then expects nothing alive.
    func expectNoLeak(_ subject: Subject, sourceLocation: SourceLocation = #_sourceLocation,
                      _ request: (Int) async throws -> Void) async throws {
        try await request(0)
        for index in 1...Self.rounds {
            try await request(index)
        }
        await expectNothingAlive(in: subject.transport, sourceLocation: sourceLocation)
    }

    /// The URLError `body` fails with (an issue when it succeeds).
    func failure(_ body: () async throws -> Void) async -> URLError? {
        do {
            try await body()
            Issue.record("expected the request to fail")
            return nil
        } catch {
            return error as? URLError
        }
    }

    func url(_ server: TestServer, _ path: String) -> URL {
        URL(string: "https://localhost:\(server.port)\(path)")!
    }

    /// Requests `/slow` (which never answers), cancels the request once the server has it, and
    /// returns the URLError it ended with.
    func cancelOnceTheServerHasIt(_ subject: Subject, _ server: TestServer, _ index: Int) async -> URLError? {
        let seen = server.requests.withLock { $0.count }
        let request = Task { try await subject.session.data(from: url(server, "/slow?request=\(index)")) }
        _ = try? await pollUntil(every: .milliseconds(10)) { server.requests.withLock { $0.count } != seen }
        request.cancel()
        return await failure { _ = try await request.value }
    }

    @Test func successfulAsyncRequestsLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            let (data, _) = try await subject.session.data(from: url(server, "/hello?request=\(index)"))
            #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        }
        // The requests share a connection. Not "exactly one": the pool closes a connection idle
        // for 60 s, and a test task that waited that long for a thread between two requests
        // (beside other builds and a CPU hog) saw two.
        #expect(server.connectionCount < Self.rounds / 2)
    }

    @Test func successfulHTTP2RequestsLeaveNothingAlive() async throws {
        let server = try await TestServer.http2(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            let (_, response) = try await subject.session.data(from: url(server, "/hello?request=\(index)"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
        }
        // The requests share a connection. Not "exactly one": the pool closes a connection idle
        // for 60 s, and a test task that waited that long for a thread between two requests
        // (beside other builds and a CPU hog) saw two.
        #expect(server.connectionCount < Self.rounds / 2)
    }

    @Test func completionHandlerRequestsLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            let status = await withCheckedContinuation { done in
                subject.session.dataTask(with: url(server, "/hello?request=\(index)")) { _, response, _ in
                    done.resume(returning: (response as? HTTPURLResponse)?.statusCode)
                }.resume()
            }
            #expect(status == 200)
        }
    }

    @Test func delegateDataTasksLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let delegate = CompletionDelegate()
        let subject = try subject(delegate: delegate)
        try await expectNoLeak(subject) { index in
            let outcome = await delegate.run(subject.session.dataTask(with: url(server, "/hello?request=\(index)")))
            #expect(outcome == .finished(bytes: "hello over a pinned connection".utf8.count))
        }
    }

    @Test func followedRedirectsLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            let (data, response) = try await subject.session.data(from: url(server, "/redirect?to=/hello%3Frequest%3D\(index)"))
            #expect(response.url?.path == "/hello")
            #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
        }
    }

    @Test func requestsRefusedByThePinCheckLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            let error = await failure { _ = try await subject.session.data(from: url(server, "/hello?request=\(index)")) }
            #expect(error?.code == .serverCertificateUntrusted)
        }
        #expect(server.requests.withLock { $0 }.isEmpty)
    }

    @Test func cancelledRequestsLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            #expect(await cancelOnceTheServerHasIt(subject, server, index)?.code == .cancelled)
        }
    }

    @Test func cancelledHTTP2RequestsLeaveNothingAlive() async throws {
        let server = try await TestServer.http2(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            #expect(await cancelOnceTheServerHasIt(subject, server, index)?.code == .cancelled)
        }
    }

    @Test func requestsThatTimeOutLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject()
        try await expectNoLeak(subject) { index in
            var request = URLRequest(url: url(server, "/slow?request=\(index)"))
            request.timeoutInterval = 0.2
            let error = await failure { _ = try await subject.session.data(for: request) }
            #expect(error?.code == .timedOut)
        }
    }

    @Test func loadsEndedByTheResourceTimeoutLeaveNothingAlive() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let subject = try subject { $0.timeoutIntervalForResource = 0.3 }
        try await expectNoLeak(subject) { index in
            // One byte every 100 ms: never silent for long, and 30 s in all, so that however late
            // a busy machine runs the 0.3 s resource timeout, it ends the load first.
            let error = await failure { _ = try await subject.session.data(from: url(server, "/drip?bytes=300&ms=100&request=\(index)")) }
            #expect(error?.code == .timedOut)
        }
    }
}

/// Reports how each delegate-based data task ended, to the test waiting for it.
private final class CompletionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: its state is locked.
    enum Outcome: Equatable, Sendable {
        case finished(bytes: Int)
        case failed(String)
    }

    private struct Running {
        var bytes = 0
        var done: CheckedContinuation<Outcome, Never>
    }

    private let running = Locked<[Int: Running]>([:])

    /// Starts `task` and returns how it ended.
    func run(_ task: URLSessionDataTask) async -> Outcome {
        await withCheckedContinuation { done in
            running.withLock { $0[task.taskIdentifier] = Running(done: done) }
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        running.withLock { $0[dataTask.taskIdentifier]?.bytes += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let ended = running.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        ended.done.resume(returning: error.map { .failed("\($0)") } ?? .finished(bytes: ended.bytes))
    }
}
#endif
