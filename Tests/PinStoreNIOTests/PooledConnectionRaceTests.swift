#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// Pooled connections racing list updates, live: 16 clients hammer one pinned session while the
/// list switches, again and again, between pinning the server's certificate and withdrawing
/// that pin. Whatever the timing, a request started after the withdrawing list is in force
/// must never succeed: every pooled connection was admitted under the old list, so one that
/// carried such a request would be a pin bypass. (Requests started just before a switch may
/// go either way; the list is pinned again only once every request started under the
/// withdrawing list has ended.)
///
/// The same race also checks the stronger property at the write itself: through the pool's
/// write observer, every request written on a pooled connection reports the list generation it
/// was written under and the generation its connection was admitted under; none may be written
/// under (or after) a withdrawing list on a connection admitted before it. That covers the
/// requests leased just before a switch and written just after it, which the first check lets
/// go either way.
///
/// `PINSTORE_RACE_ITERATIONS` sets the number of list switches (default 1,000, what CI runs);
/// `scripts/pool-race.sh` runs the long variant.
@Suite(.serialized) struct PooledConnectionRaceTests {
    static let iterations = ProcessInfo.processInfo.environment["PINSTORE_RACE_ITERATIONS"].flatMap(Int.init) ?? 1_000
    static let clients = 16

    /// A signed static list pinning `certificate` (a PEM fixture) for localhost.
    static func list(pinning certificate: String) throws -> Data {
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        let der = try TestResources.certificate(certificate).derRepresentation
        return try signer.staticList([FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(der), expires: 4102444799)])
    }

    /// What the race saw.
    struct Tally: Sendable {
        var succeeded = 0
        var refused = 0
        var otherFailures = 0
        /// Requests started after the withdrawing list was in force that succeeded anyway.
        var bypasses: [String] = []
        /// The list generation of each withdrawing list, read as soon as it was in force.
        var withdrawingGenerations: [UInt64] = []
        /// Every distinct (written under, admitted under) pair the pool's write observer saw.
        var writes: Set<WrittenUnder> = []
        /// Writes whose connection was checked again at the write (leased before a switch).
        var recheckedWrites = 0

        /// Writes on a connection admitted before a withdrawing list, made while or after that
        /// list was in force: each a request the withdrawn pin still carried.
        var writesAfterWithdrawal: [String] {
            writes.sorted { ($0.generation, $0.admittedUnder) < ($1.generation, $1.admittedUnder) }.compactMap { write in
                guard let withdrawn = withdrawingGenerations.first(where: { write.admittedUnder < $0 && $0 <= write.generation }) else { return nil }
                return "written under generation \(write.generation) on a connection admitted under \(write.admittedUnder), though list \(withdrawn) withdrew its pin"
            }
        }
    }

    /// One write as the test keeps it: the generation it was written under and its connection's.
    struct WrittenUnder: Hashable, Sendable {
        var generation: UInt64
        var admittedUnder: UInt64
    }

    /// Which list is in force, and in which switch; `draining`: no new request starts.
    struct Phase: Sendable {
        var withdrawn = false
        var draining = false
        var iteration = 0
        var stop = false
        /// Requests under way that started while the withdrawing list was in force.
        var underWayWhileWithdrawn = 0
    }

    static func race(server: TestServer) async throws -> Tally {
        let stub = SwitchableList()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-race-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try PinStore(configuration: .init(
            serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: directory, requestTimeout: HangGuard.seconds), fetcher: stub)
        let pinned = try Self.list(pinning: "pki/localhost.pem")
        let withdrawn = try Self.list(pinning: "pki/rogue-leaf.pem")
        stub.body.withLock { $0 = pinned }
        try #require(await store.update(mode: .forced) == .ok)

        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        // No refusal-triggered downloads: the test alone switches the list.
        let session = URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false,
                                                        updateOnMismatch: false, basedOn: base))
        let url = URL(string: "https://localhost:\(server.port)/hello")!
        let phase = Locked(Phase())
        let tally = Locked(Tally())
        let pool = try #require(PinnedSessionRegistry.transport(of: session.configuration)?.pool)
        pool.observeWrites { write in
            tally.withLock { tally in
                tally.writes.insert(WrittenUnder(generation: write.generation, admittedUnder: write.admittedUnder))
                if write.recheckedAtWrite { tally.recheckedWrites += 1 }
            }
        }
        defer { pool.observeWrites(nil) }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<Self.clients {
                group.addTask {
                    while true {
                        let started = phase.withLock { phase -> Phase in
                            if phase.withdrawn && !phase.draining { phase.underWayWhileWithdrawn += 1 }
                            return phase
                        }
                        if started.stop { return }
                        if started.draining {
                            try await Task.sleep(for: .microseconds(200))
                            continue
                        }
                        defer { if started.withdrawn { phase.withLock { $0.underWayWhileWithdrawn -= 1 } } }
                        do {
                            _ = try await session.data(from: url)
                            tally.withLock { tally in
                                tally.succeeded += 1
                                if started.withdrawn {
                                    tally.bypasses.append("a request started in switch \(started.iteration), after the pin was withdrawn, succeeded")
                                }
                            }
                        } catch let error as URLError where error.code == .serverCertificateUntrusted {
                            tally.withLock { $0.refused += 1 }
                        } catch {
                            tally.withLock { $0.otherFailures += 1 }
                        }
                    }
                }
            }
            for iteration in 1...Self.iterations {
                // Withdraw while requests are under way on pooled connections. The phase flips
                // once the list is in force (update returns after installing it): a request
                // that starts after that must be refused, on a pooled connection or a new one.
                stub.body.withLock { $0 = withdrawn }
                try #require(await store.update(mode: .forced) == .ok)
                // Only this loop changes the list, and no pin expires: the generation read now
                // is the withdrawing list's.
                let withdrawingGeneration = store.listGeneration
                tally.withLock { $0.withdrawingGenerations.append(withdrawingGeneration) }
                phase.withLock { $0 = Phase(withdrawn: true, iteration: iteration) }
                try await Task.sleep(for: .milliseconds(1))
                // Before pinning again, every request started under the withdrawing list has
                // ended: none of them can be admitted by the next list instead.
                phase.withLock { $0.draining = true }
                while phase.withLock({ $0.underWayWhileWithdrawn }) > 0 { try await Task.sleep(for: .microseconds(200)) }
                stub.body.withLock { $0 = pinned }
                try #require(await store.update(mode: .forced) == .ok)
                phase.withLock { $0 = Phase(withdrawn: false, iteration: iteration) }
                try await Task.sleep(for: .milliseconds(2))
            }
            phase.withLock { $0.stop = true }
            try await group.waitForAll()
        }
        session.finishTasksAndInvalidate()
        return tally.withLock { $0 }
    }

    /// One race per protocol, run by the first test that needs it and read by the others:
    /// each test checks one property of the same run, and CI pays for one run per protocol.
    private actor SharedRuns {
        static let shared = SharedRuns()
        private var runs: [Bool: Task<Tally, any Error>] = [:]

        /// The race over HTTP/2 (`http2`) or HTTP/1.1 against a loopback TLS server.
        func tally(http2: Bool) async throws -> Tally {
            if let run = runs[http2] { return try await run.value }
            let run = Task {
                let server = http2
                    ? try await TestServer.http2(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
                    : try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
                let started = Date()
                do {
                    let tally = try await PooledConnectionRaceTests.race(server: server)
                    print("pool race, \(http2 ? "HTTP/2" : "HTTP/1.1"): \(PooledConnectionRaceTests.iterations) switches, \(tally.succeeded) succeeded, \(tally.refused) refused, \(tally.otherFailures) other failures, \(server.connectionCount) connections, \(tally.recheckedWrites) writes checked again at the write, \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
                    await server.shutdown()
                    return tally
                } catch {
                    await server.shutdown()
                    throw error
                }
            }
            runs[http2] = run
            return try await run.value
        }
    }

    @Test func aWithdrawnPinCarriesNoFurtherRequestOnPooledHTTP1Connections() async throws {
        let tally = try await SharedRuns.shared.tally(http2: false)
        #expect(tally.bypasses.isEmpty, "\(tally.bypasses.prefix(5))")
        #expect(tally.succeeded > 0 && tally.refused > 0)   // both phases were exercised
    }

    @Test func noRequestIsWrittenOnAPooledHTTP1ConnectionAfterTheListThatWithdrewItsPin() async throws {
        let tally = try await SharedRuns.shared.tally(http2: false)
        #expect(tally.writesAfterWithdrawal.isEmpty, "\(tally.writesAfterWithdrawal.count): \(tally.writesAfterWithdrawal.prefix(5))")
        #expect(tally.withdrawingGenerations.count == Self.iterations && !tally.writes.isEmpty)
    }

    @Test func aWithdrawnPinCarriesNoFurtherRequestOnPooledHTTP2Connections() async throws {
        let tally = try await SharedRuns.shared.tally(http2: true)
        #expect(tally.bypasses.isEmpty, "\(tally.bypasses.prefix(5))")
        #expect(tally.succeeded > 0 && tally.refused > 0)
    }

    @Test func noRequestIsWrittenOnAPooledHTTP2ConnectionAfterTheListThatWithdrewItsPin() async throws {
        let tally = try await SharedRuns.shared.tally(http2: true)
        #expect(tally.writesAfterWithdrawal.isEmpty, "\(tally.writesAfterWithdrawal.count): \(tally.writesAfterWithdrawal.prefix(5))")
        #expect(tally.withdrawingGenerations.count == Self.iterations && !tally.writes.isEmpty)
    }
}

/// Serves whichever signed list the test set last.
private final class SwitchableList: FingerprintListFetcher {
    let body = Locked<Data?>(nil)

    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        guard let body = body.withLock({ $0 }) else { return FingerprintListResponse(statusCode: 404, headers: [:], body: Data()) }
        return FingerprintListResponse(statusCode: 200, headers: [:], body: body)
    }
}
#endif
