import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Blocking and silent updates, sharing, scheduling and replace semantics.
@Suite struct PinStoreUpdateTests {
    @Test func firstUpdateBlocksAndDownloads() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 1)
        #expect(store.storedEntries.count == 4)
    }

    @Test func updateBeforeScheduleDoesNotTouchTheNetwork() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 1)
    }

    /// Answers every download with `body`, except that each one after the first waits until
    /// the test releases it.
    final class HeldFetcher: FingerprintListFetcher {
        let body: Data
        private let released = Locked(false)
        private let requests = Locked(0)
        init(_ body: Data) { self.body = body }

        var requestCount: Int { requests.withLock { $0 } }
        func release() { released.withLock { $0 = true } }

        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            if requests.withLock({ $0 += 1; return $0 }) > 1 {
                while !released.withLock({ $0 }) {
                    if Task.isCancelled { throw PinStoreError(.network, "cancelled while held") }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            return FingerprintListResponse(statusCode: 200, headers: [:], body: body)
        }
    }

    /// The caller does not wait for the scheduled download: it is held until `update()` has
    /// returned, so an `update()` that waited for it would never return (the time limit is the
    /// hang guard). A bound on the elapsed time (1.5 s against a 2 s download) measured the
    /// machine instead.
    @Test(.timeLimit(.minutes(10))) func updateAfterScheduleRunsSilentlyInBackground() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = HeldFetcher(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, clock: clock)
        _ = await store.update()
        clock.advance(7 * 86_400 + 1)
        #expect(await store.update() == .ok)
        fetcher.release()
        // The download still happens.
        _ = try await pollUntil(every: .milliseconds(20)) { fetcher.requestCount >= 2 }
        #expect(fetcher.requestCount == 2)
    }

    @Test func forcedUpdateAlwaysDownloads() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        #expect(await store.update(mode: .forced) == .ok)
        #expect(fetcher.requestCount == 2)
    }

    @Test func fallbackDoesNotCountAsValidStoredPins() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, fallback: StoreFixtures.list("fallback.json"))
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 1)
    }

    @Test func concurrentUpdatesShareOneRequest() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher(delay: .milliseconds(200)) { _ in
            FingerprintListResponse(statusCode: 200, headers: [:], body: try! StoreFixtures.list("static-good.json"))
        }
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        let results = await withTaskGroup(of: PinStore.UpdateResult.self) { group in
            for _ in 0..<20 { group.addTask { await store.update(mode: .forced) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: .ok, count: 20))
        #expect(fetcher.requestCount == 1)
    }

    @Test func completionHandlerBridgeDeliversResultOnItsQueue() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory.url)
        let queue = DispatchQueue(label: "pinstore.tests.completion")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let (result, onQueue) = await withCheckedContinuation { continuation in
            store.update(mode: .default, completionQueue: queue) { result in
                continuation.resume(returning: (result, DispatchQueue.getSpecific(key: key) == true))
            }
        }
        #expect(result == .ok)
        #expect(onQueue)
    }

    @Test func newerListReplacesTheStoredOne() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! StoreFixtures.list("static-depth.json")) }
        #expect(await store.update(mode: .forced) == .ok)
        // The api.pinstore.test pins were removed on the server, so they are gone here too.
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("api-p256")) == .empty)
        #expect(store.storedEntries.count == 1)
    }

    @Test func listLeavingNothingValidKeepsStoreWithValidPins() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! StoreFixtures.list("static-expired-only.json")) }
        #expect(await store.update(mode: .forced) == .storeIsEmpty)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func expiredEntriesAreDroppedFromAnAcceptedList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let key = try StoreFixtures.signingKey()
        let localhost = try StoreFixtures.der("localhost")
        let entries = [
            FingerprintEntry(name: "localhost", fingerprint: SHA256Digest.hash(localhost), expires: 4_102_444_799),
            FingerprintEntry(name: "old.pinstore.test", fingerprint: SHA256Digest.hash(localhost), expires: 1_000),
        ]
        let body = try TestLists.signedStatic(entries, key: key)
        let store = try StoreFixtures.store(ScriptedFetcher.serving(body), directory: directory.url, clock: clock)
        #expect(await store.update() == .ok)
        #expect(store.storedEntries.map(\.name) == ["localhost"])
    }

    @Test func nextUpdateIsPeriodicIntervalWhenPinsLiveLong() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory.url, clock: clock)
        _ = await store.update()
        #expect(store.nextUpdateDate == clock.now().addingTimeInterval(7 * 86_400))
    }
}

@Suite struct UpdateScheduleTests {
    let now = Date(timeIntervalSince1970: 1_000_000)
    func entry(_ name: String, expiresIn seconds: Int64) -> FingerprintEntry {
        FingerprintEntry(name: name, fingerprint: Data(count: 32), expires: 1_000_000 + seconds)
    }
    func next(_ entries: [FingerprintEntry]) -> TimeInterval {
        UpdateSchedule.nextUpdate(for: entries, now: now, periodicInterval: 7 * 86_400, expirationThreshold: 14 * 86_400).timeIntervalSince(now)
    }

    @Test func farExpiryGivesThePeriodicInterval() {
        #expect(next([entry("a", expiresIn: 30 * 86_400)]) == 7 * 86_400)
    }

    @Test func expiryWithinThresholdGivesAnEighthOfTheRemainingTime() {
        #expect(next([entry("a", expiresIn: 8 * 86_400)]) == 86_400)
    }

    @Test func earliestNameDecidesUsingEachNamesLatestEntry() {
        // "a" expires in 1 day but is renewed by a 30-day entry; "b" in 8 days decides.
        let entries = [entry("a", expiresIn: 86_400), entry("a", expiresIn: 30 * 86_400), entry("b", expiresIn: 8 * 86_400)]
        #expect(next(entries) == 86_400)
    }

    @Test func pastExpiryGivesNow() {
        #expect(next([entry("a", expiresIn: -5)]) == 0)
    }
}
