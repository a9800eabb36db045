import Foundation
import PinStoreTesting
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Every download the library makes has a total deadline it keeps itself: a server on
/// 127.0.0.1 that sends one byte every quarter second (never idle long enough for
/// FoundationNetworking's idle timeout, which is all it enforces) is cut at the deadline. Each
/// test asserts the cause, not a time: the typed deadline error, and the server seeing the
/// client close the connection before the answer ended. Without the deadline the drip would
/// end after minutes and the download would succeed.
@Suite struct DownloadDeadlineTests {
    /// 480 bytes at 4 a second: two minutes of answer, far past every deadline here.
    static let drip = Data(repeating: 0x30, count: 480)
    static let interval: TimeInterval = 0.25
    /// The library's deadline in these tests: short, yet long enough for the request to reach
    /// the server on a loaded machine, so the server can see the client give up.
    static let deadline: TimeInterval = 2

    /// Waits until `condition` holds (``HangGuard`` bounds a stuck test; not a measurement).
    static func eventually(_ condition: () -> Bool) async throws {
        _ = try await pollUntil(every: .milliseconds(20), condition)
    }

    static func store(serviceURL: URL, keyDocumentURL: URL? = nil, directory: TemporaryDirectory,
                      fetcher: (any FingerprintListFetcher)? = nil) throws -> PinStore {
        var configuration = PinStore.Configuration(serviceURL: serviceURL, publicKey: try StoreFixtures.publicKey(),
                                                   storageDirectory: directory.url, requestTimeout: Self.deadline)
        configuration.keyDocumentURL = keyDocumentURL
        if let fetcher {
            return try PinStore(configuration: configuration, fetcher: fetcher)
        }
        return try PinStore(configuration: configuration)
    }

    @Test(.timeLimit(.minutes(10)))
    func theFetcherCutsADrippingListAtItsDeadlineAndClosesTheConnection() async throws {
        let server = try await TestCRLServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serveDripping(Self.drip, every: Self.interval, at: "list.json")
        let request = FingerprintListRequest(url: server.baseURL.appendingPathComponent("list.json"), timeout: Self.deadline, allowsLoopbackHTTP: true)
        let error = await #expect(throws: PinStoreError.self) { _ = try await URLSessionListFetcher().fetch(request) }
        #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
        try await Self.eventually { server.abandonedRequestCount == 1 }
        #expect(server.abandonedRequestCount == 1)
        #expect(server.openRequestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aListUpdateFromADrippingServerFailsWithTheDeadline() async throws {
        let server = try await TestCRLServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serveDripping(Self.drip, every: Self.interval, at: "list.json")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(serviceURL: server.baseURL.appendingPathComponent("list.json"), directory: directory)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .networkError)
        #expect(report.error?.code == .deadlineExceeded, "\(String(describing: report.error))")
        try await Self.eventually { server.abandonedRequestCount == 1 }
        #expect(server.abandonedRequestCount == 1)
    }

    @Test(.timeLimit(.minutes(10)))
    func aKeyDocumentDownloadFromADrippingServerFailsWithTheDeadline() async throws {
        let server = try await TestCRLServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serveDripping(Self.drip, every: Self.interval, at: "keys.json")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(serviceURL: server.baseURL.appendingPathComponent("list.json"),
                                   keyDocumentURL: server.baseURL.appendingPathComponent("keys.json"), directory: directory)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .deadlineExceeded, "\(String(describing: report.error))")
        try await Self.eventually { server.abandonedRequestCount == 1 }
        #expect(server.requestCount(for: "keys.json") == 1)
        // The update stopped at the key documents: the list was never asked for.
        #expect(server.requestCount(for: "list.json") == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aCRLFromADrippingServerIsUnavailableWithTheDeadline() async throws {
        let server = try await TestCRLServer.start()
        defer { Task { try? await server.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: server.baseURL)
        server.serveDripping(Self.drip, every: Self.interval, at: "intermediate.crl")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(serviceURL: server.baseURL.appendingPathComponent("list.json"), directory: directory)
        let url = try #require(pki.intermediateCRLURL)
        await store.crl.load(url: url, issuer: pki.intermediate.derRepresentation,
                             issuerKey: Digest32(SHA256Digest.hash(pki.intermediate.subjectPublicKeyInfo))!)
        let entry = store.crl.entry(for: url.absoluteString)
        #expect(entry?.crl == nil)
        #expect(entry?.failure?.code == .deadlineExceeded, "\(String(describing: entry?.failure))")
        try await Self.eventually { server.abandonedRequestCount == 1 }
        #expect(server.abandonedRequestCount == 1)
    }

    @Test(.timeLimit(.minutes(10)))
    func aReportToADrippingCollectorIsCutAndTheNextReportStillGoesThrough() async throws {
        let server = try await TestCRLServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serveDripping(Self.drip, every: Self.interval, at: "slow-reports")
        server.serve(.status(204), at: "reports")
        let sender = URLSessionReportSender()
        let error = await #expect(throws: PinFailureReportDeliveryError.self) {
            try await sender.send(Data("{}".utf8), to: server.baseURL.appendingPathComponent("slow-reports"), timeout: Self.deadline)
        }
        #expect(error?.description.contains("did not answer within") == true, "\(String(describing: error))")
        try await Self.eventually { server.abandonedRequestCount == 1 }
        #expect(server.abandonedRequestCount == 1)
        // The sender keeps one connection to a collector: the cut one no longer holds it.
        try await sender.send(Data("{}".utf8), to: server.baseURL.appendingPathComponent("reports"), timeout: 30)
        #expect(server.requestCount(for: "reports") == 1)
    }

    /// A fetcher that never returns and ignores cancellation.
    struct StuckFetcher: FingerprintListFetcher {
        let calls = Locked(0)
        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            calls.withLock { $0 += 1 }
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            throw PinStoreError(.network, "unreachable")
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func theStoreKeepsTheDeadlineOfAFetcherThatIgnoresIt() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = StuckFetcher()
        let store = try Self.store(serviceURL: try #require(URL(string: "https://pins.pinstore.test/list.json")), directory: directory,
                                   fetcher: fetcher)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .deadlineExceeded, "\(String(describing: report.error))")
        #expect(fetcher.calls.withLock { $0 } == 1)
    }

    @Test func anInfiniteRequestTimeoutIsAConfigurationError() throws {
        var configuration = PinStore.Configuration(serviceURL: try #require(URL(string: "https://pins.pinstore.test/list.json")),
                                                   publicKey: try StoreFixtures.publicKey())
        configuration.requestTimeout = .infinity
        let error = #expect(throws: PinStoreError.self) { _ = try PinStore(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason.contains("requestTimeout") == true)
    }

    // MARK: The deadline itself

    @Test(.timeLimit(.minutes(10)))
    func anOperationThatNeverEndsGetsTheDeadlinesErrorAndIsCancelled() async throws {
        let cancelled = Locked(false)
        let error = await #expect(throws: PinStoreError.self) {
            try await TotalDeadline.run(seconds: 0.2, { () async throws(PinStoreError) -> Int in
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
                } onCancel: {
                    cancelled.withLock { $0 = true }
                }
                return 0
            }, expired: { PinStoreError(.deadlineExceeded, "expired") })
        }
        #expect(error?.code == .deadlineExceeded)
        try await Self.eventually { cancelled.withLock { $0 } }
        #expect(cancelled.withLock { $0 })
    }

    @Test func anOperationThatEndsFirstGivesItsOwnOutcome() async throws {
        // The longest limit: `run`'s work ends only when its task gets a turn on the pool, and
        // in a full parallel run on the loaded machine a task that returns at once waited more
        // than 30 s for one. (The downloads decide their side off the pool: `race`.)
        let value = try await TotalDeadline.run(seconds: TotalDeadline.longest, { () async throws(PinStoreError) -> Int in 7 },
                                                expired: { PinStoreError(.deadlineExceeded, "expired") })
        #expect(value == 7)
        let error = await #expect(throws: PinStoreError.self) {
            try await TotalDeadline.run(seconds: TotalDeadline.longest, { () async throws(PinStoreError) -> Int in throw PinStoreError(.network, "down") },
                                        expired: { PinStoreError(.deadlineExceeded, "expired") })
        }
        #expect(error?.code == .network)
    }

    @Test func aRaceDecidedByItsWorkGivesTheWorksOutcomeAndNeverCancelsIt() async throws {
        let cancelled = Locked(false)
        let result = await TotalDeadline.race(seconds: TotalDeadline.longest, start: { (finish: @escaping @Sendable (Result<Int, PinStoreError>) -> Void) in
            // From another thread, as a URLSession delegate reports.
            DispatchQueue.global().async { finish(.success(7)) }
            return { cancelled.withLock { $0 = true } }
        }, expired: { PinStoreError(.deadlineExceeded, "expired") }, cancelled: { PinStoreError(.network, "cancelled") })
        #expect(try result.get() == 7)
        #expect(!cancelled.withLock { $0 })
    }

    @Test(.timeLimit(.minutes(10)))
    func aRaceWhoseWorkNeverReportsEndsAtTheDeadlineAndCancelsIt() async throws {
        let cancelled = Locked(false)
        let result = await TotalDeadline.race(seconds: 0.2, start: { (_: @escaping @Sendable (Result<Int, PinStoreError>) -> Void) in
            { cancelled.withLock { $0 = true } }
        }, expired: { PinStoreError(.deadlineExceeded, "expired") }, cancelled: { PinStoreError(.network, "cancelled") })
        #expect(throws: PinStoreError(.deadlineExceeded, "")) { try result.get() }
        #expect(cancelled.withLock { $0 })
    }

    @Test(arguments: [Double.nan, -1, 0, .infinity, 1e300])
    func anyLimitIsClampedWithoutTrapping(_ seconds: Double) {
        let clamped = TotalDeadline.clamped(seconds)
        #expect(clamped >= 0 && clamped <= TotalDeadline.longest)
        #expect(!FingerprintListRequest.seconds(seconds).isEmpty)
    }
}
