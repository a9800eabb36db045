import Foundation
import PinStoreTestSupport
import ServiceLifecycle
import Testing
@testable import PinStore
import PinStoreSigning

/// Lists made at test time with the fixture signing key (OpenSSL signs them).
enum SignedLists {
    static let farFuture: Int64 = 4_102_444_799  // 2099-12-31T23:59:59Z, like the fixtures

    static func entry(_ certificate: String, name: String = "localhost", expires: Int64 = farFuture) throws -> FingerprintEntry {
        FingerprintEntry(name: name, fingerprint: SHA256Digest.hash(try StoreFixtures.der(certificate)), expires: expires)
    }

    /// A static list pinning each of `certificates` (pki fixture names) for localhost.
    static func staticList(_ certificates: [String]) throws -> Data {
        try FingerprintListSigner(privateKey: StoreFixtures.signingKey()).staticList(certificates.map { try entry($0) })
    }

    /// A challenge-mode body pinning `certificates` with `timestamp`.
    static func challengeBody(_ certificates: [String], timestamp: Int64) throws -> Data {
        try FingerprintListSigner.challengeModeBody(certificates.map { try entry($0) }, timestamp: timestamp)
    }
}

/// The refresh schedule as a value: exact backoff times, no clock, no task.
@Suite struct RefreshScheduleTests {
    let start = Date(timeIntervalSince1970: 1_893_456_000)

    @Test func retryDelayStartsAtAMinuteAndDoubles() {
        let delays = (1...5).map { RefreshSchedule.retryDelay(afterFailures: $0, periodicInterval: 86_400) }
        #expect(delays == [60, 120, 240, 480, 960])
    }

    @Test func retryDelayNeverExceedsThePeriodicInterval() {
        #expect(RefreshSchedule.retryDelay(afterFailures: 4, periodicInterval: 300) == 300)
        #expect(RefreshSchedule.retryDelay(afterFailures: 200, periodicInterval: 7 * 86_400) == 7 * 86_400)
        // A drill with a 2-second interval retries every 2 seconds.
        #expect(RefreshSchedule.retryDelay(afterFailures: 1, periodicInterval: 2) == 2)
    }

    @Test func failureMovesTheDueDateByTheBackoff() {
        var schedule = RefreshSchedule(listDue: start, periodicInterval: 86_400)
        schedule.downloadFailed(at: start)
        #expect(schedule.dueDate == start + 60)
        schedule.downloadFailed(at: start + 60)
        #expect(schedule.dueDate == start + 180)
        #expect(!schedule.isDue(at: start + 179))
        #expect(schedule.isDue(at: start + 180))
    }

    @Test func aFailureBeforeTheListIsDueDoesNotBringTheUpdateForward() {
        var schedule = RefreshSchedule(listDue: start + 3_600, periodicInterval: 86_400)
        schedule.downloadFailed(at: start)
        #expect(schedule.dueDate == start + 3_600)
    }

    @Test func anAppliedListForgetsFailures() {
        var schedule = RefreshSchedule(listDue: start, periodicInterval: 86_400)
        schedule.downloadFailed(at: start)
        schedule.downloadFailed(at: start + 60)
        schedule.listApplied(nextUpdate: start + 500)
        #expect(schedule.dueDate == start + 500)
        #expect(schedule.failures == 0)
        schedule.downloadFailed(at: start + 500)
        #expect(schedule.dueDate == start + 560)
    }
}

/// A store in use follows its schedule without anyone calling `update()`.
@Suite struct PinStoreUseScheduleTests {
    @Test func validateStartsADueUpdateWithoutBlocking() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, clock: clock)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(fetcher.requestCount == 1)
        // Not due yet: validating does not touch the network.
        for _ in 0..<100 { _ = store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(fetcher.requestCount == 1)
        // Due: the next validation answers from the pins it has and starts one download.
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! SignedLists.staticList(["attacker"])) }
        clock.set(store.nextUpdateDate)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        for _ in 0..<100 { _ = store.matchPins(commonName: "localhost", fingerprint: Data(count: 32)) }
        try await waitUntil { store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .trusted }
        #expect(fetcher.requestCount == 2)
    }

    @Test func aFailedScheduledDownloadIsRetriedOnlyAfterTheBackoff() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "list server down") }
        let store = try StoreFixtures.store(fetcher, directory: directory.url, clock: clock,
                                            fallback: try StoreFixtures.list("static-good.json"))
        let leaf = try StoreFixtures.der("localhost")
        #expect(store.matchPins(commonName: "localhost", certificateData: leaf) == .trusted)
        try await waitUntil { fetcher.requestCount == 1 && store.nextUpdateDate > clock.now() }
        #expect(store.nextUpdateDate == clock.now() + 60)
        for _ in 0..<50 { _ = store.matchPins(commonName: "localhost", certificateData: leaf) }
        clock.advance(59)
        _ = store.matchPins(commonName: "localhost", certificateData: leaf)
        try await Task.sleep(for: .milliseconds(50))
        #expect(fetcher.requestCount == 1)
        clock.advance(1)
        _ = store.matchPins(commonName: "localhost", certificateData: leaf)
        try await waitUntil { fetcher.requestCount == 2 && store.nextUpdateDate > clock.now() }
        #expect(store.nextUpdateDate == clock.now() + 120)
    }
}

/// `run()`: the idle store keeps itself fresh, with exact times under an injected clock.
@Suite struct PinStoreRunTests {
    @Test func runRetriesAfterAMinuteThenDoublingUpToThePeriodicInterval() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let start = clock.now()
        let attempts = Locked<[TimeInterval]>([])
        let fetcher = ScriptedFetcher { _ throws(PinStoreError) in
            attempts.withLock { $0.append(clock.now().timeIntervalSince(start)) }
            throw PinStoreError(.network, "list server down")
        }
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.periodicUpdateInterval = 300
        let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: clock)
        let run = Task { try await store.run() }
        defer { run.cancel() }
        while attempts.withLock({ $0.count }) < 6 {
            guard let wake = await clock.nextWake() else { Issue.record("run() stopped sleeping"); return }
            clock.set(wake)
            // Let the woken loop reach its next sleep (or its download) before moving on.
            try await Task.sleep(for: .milliseconds(5))
        }
        // 60, 120, 240, then capped at the 300-second periodic interval.
        #expect(attempts.withLock { $0 }.prefix(6) == [0, 60, 180, 420, 720, 1_020])
    }

    @Test func runUpdatesWhenTheListIsDueAndSleepsUntilTheNextDate() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.periodicUpdateInterval = 3_600
        let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: clock)
        let start = clock.now()
        let run = Task { try await store.run() }
        defer { run.cancel() }
        try await waitUntil { fetcher.requestCount == 1 && store.nextUpdateDate > start }
        #expect(store.nextUpdateDate == start + 3_600)
        // The loop wakes each minute (gauges) but downloads only when the list is due.
        var wakes = 0
        while true {
            // Returns once the loop sleeps again, so everything the last wake did is done.
            guard let wake = await clock.nextWake() else { Issue.record("run() stopped sleeping"); return }
            if fetcher.requestCount >= 2 { break }
            #expect(wake <= start + 3_600)
            clock.set(wake)
            wakes += 1
        }
        #expect(wakes == 60)
        #expect(clock.now() == start + 3_600)
    }

    @Test func runReturnsWhenCancelled() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])), directory: directory.url)
        let run = Task { try await store.run() }
        try await Task.sleep(for: .milliseconds(100))
        run.cancel()
        let finished = Locked(false)
        Task { _ = try? await run.value; finished.withLock { $0 = true } }
        try await waitUntil { finished.withLock { $0 } }
    }

    @Test(.timeLimit(.minutes(10)))
    func runEndsOnGracefulShutdownInAServiceGroupWithoutWaitingForItsSleep() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A clock nobody advances: run() would sleep forever, so it can only end because
        // graceful shutdown interrupted the sleep (about 40 ms on an idle machine).
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, clock: clock)
        let group = ServiceGroup(configuration: .init(services: [.init(service: store)], logger: .init(label: "test")))
        let running = Task { try await group.run() }
        try await waitUntil { fetcher.requestCount == 1 && store.nextUpdateDate > clock.now() }
        #expect(await clock.nextWake() != nil)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(clock.now() == ManualClock.inValidPeriod().now())
    }
}

/// Polls `condition` for background work the test cannot await directly, and records an issue
/// when it still does not hold after ``HangGuard/seconds`` (a bound of 10 s measured a loaded
/// machine, not the store).
func waitUntil(_ condition: () throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(HangGuard.seconds)
    while try !condition() {
        guard Date() < deadline else {
            if try condition() { return }
            Issue.record("condition not met within \(Int(HangGuard.seconds)) s")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
