#if canImport(FoundationNetworking)
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// Cancelling a request through its pool ticket ends that request only: once it has ended, its
/// keep-alive connection carries the next request, which a late cancellation must leave alone
/// (a URLSession task stopped after its response arrived does exactly that).
@Suite struct PinnedRequestCancellationTests {
    /// Collects one response and reports how it ended.
    final class CollectingReceiver: PinnedResponseReceiver, @unchecked Sendable {
        // @unchecked: called on the connection's event loop only, one call after the other.
        private var bytes = 0
        private let ended: CheckedContinuation<Result<Int, PinnedHTTPFailure>, Never>

        init(_ ended: CheckedContinuation<Result<Int, PinnedHTTPFailure>, Never>) {
            self.ended = ended
        }

        func receiveHead(_ head: HTTPResponseHead) {}
        func receiveBodyPart(_ part: ByteBuffer) -> Bool {
            bytes += part.readableBytes
            return true
        }
        func receiveEnd() { ended.resume(returning: .success(bytes)) }
        func fail(_ failure: PinnedHTTPFailure, afterResponseBytes: Bool) { ended.resume(returning: .failure(failure)) }
    }

    func pool() throws -> PinnedConnectionPool {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([])
        return PinnedConnectionPool(configuration: .init(),
                                    verifier: PinningTLSVerifier(store: try Pins.good(), trustRoots: try Pins.anchors),
                                    context: .success(try NIOSSLContext(configuration: tls)),
                                    group: MultiThreadedEventLoopGroup.singleton)
    }

    func request(_ path: String, port: Int) -> PinnedConnectionPool.Request {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "localhost:\(port)")
        return PinnedConnectionPool.Request(key: .init(host: HostName(normalized: "localhost"), port: port),
                                            head: HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers),
                                            body: nil, timeout: .seconds(Int64(HangGuard.seconds)))  // a hang guard
    }

    @Test func cancellingARequestThatAlreadyEndedLeavesTheNextRequestOnItsConnectionAlone() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let pool = try pool()
        defer { pool.shutDown() }
        var firstTicket: PinnedConnectionPool.Ticket?
        let first = await withCheckedContinuation { ended in
            firstTicket = pool.execute(request("/hello", port: server.port), receiver: CollectingReceiver(ended))
        }
        #expect(try first.get() == "hello over a pinned connection".utf8.count)
        // The second request takes the same connection (5 bytes, one every 100 ms); the first
        // one's ticket is cancelled while it runs.
        let cancelFirst = try #require(firstTicket)
        let second = await withCheckedContinuation { ended in
            _ = pool.execute(request("/drip?bytes=5&ms=100", port: server.port), receiver: CollectingReceiver(ended))
            Task {
                try? await Task.sleep(for: .milliseconds(150))
                cancelFirst.cancel()
            }
        }
        #expect(try second.get() == 5)
        #expect(server.connectionCount == 1)
    }

    /// A TLS close waits for the peer's close_notify; a connection the pool counted until then
    /// kept its slot, and six timed-out requests stalled the next one to the host.
    @Test func aTimedOutRequestsConnectionLeavesThePoolBeforeTheCallerHearsOfTheTimeout() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let pool = try pool()
        defer { pool.shutDown() }
        var slow = request("/slow", port: server.port)
        slow.timeout = .milliseconds(300)
        let ended = await withCheckedContinuation { ended in
            _ = pool.execute(slow, receiver: CollectingReceiver(ended))
        }
        guard case .failure(.timedOut) = ended else {
            Issue.record("expected a timeout, got \(ended)")
            return
        }
        #expect(pool.connectionCount(for: .init(host: HostName(normalized: "localhost"), port: server.port)) == 0)
    }

    @Test func aCancelledRequestsConnectionLeavesThePoolBeforeTheCallerHearsOfTheCancellation() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let pool = try pool()
        defer { pool.shutDown() }
        var ticket: PinnedConnectionPool.Ticket?
        // A timeout far beyond the wait for the server below: on a busy machine the request
        // must still be running when it is cancelled (a timeout first is another test's case).
        var slow = request("/slow", port: server.port)
        slow.timeout = .seconds(300)
        let ended = await withCheckedContinuation { ended in
            ticket = pool.execute(slow, receiver: CollectingReceiver(ended))
            let cancel = ticket
            Task {
                // Once the server has the request, so that the running request is aborted.
                _ = try? await pollUntil(every: .milliseconds(10)) { !server.requests.withLock { $0.isEmpty } }
                cancel?.cancel()
            }
        }
        guard case .failure(.cancelled) = ended else {
            Issue.record("expected a cancellation, got \(ended)")
            return
        }
        #expect(pool.connectionCount(for: .init(host: HostName(normalized: "localhost"), port: server.port)) == 0)
    }

    /// A connection that fails once nobody waits for it any more (its request was cancelled
    /// during the handshake) leaves no failure in the pool: one kept "for later" stayed for the
    /// life of the pool.
    @Test func aConnectionThatFailsAfterItsRequestWasCancelledLeavesNoFailureBehind() async throws {
        let listener = try SilentLoopbackListener()
        let pool = try pool()
        defer { pool.shutDown() }
        var hanging = request("/hello", port: listener.port)
        hanging.timeout = .milliseconds(300)   // also the handshake's limit
        let ended = await withCheckedContinuation { ended in
            pool.execute(hanging, receiver: CollectingReceiver(ended)).cancel()
        }
        guard case .failure(.cancelled) = ended else {
            Issue.record("expected a cancellation, got \(ended)")
            return
        }
        let key = PinnedConnectionPool.Key(host: HostName(normalized: "localhost"), port: listener.port)
        // The handshake to the silent listener gives up after 300 ms.
        _ = try await pollUntil(every: .milliseconds(10)) { pool.connectionCount(for: key) == 0 }
        #expect(pool.connectionCount(for: key) == 0)
        #expect(pool.heldRequestCount.waiting == 0)
        #expect(pool.heldRequestCount.undeliveredFailures == 0)
        withExtendedLifetime(listener) {}
    }
}
#endif
