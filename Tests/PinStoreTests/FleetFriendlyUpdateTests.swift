import Foundation
import PinStoreDevServer
import PinStoreTestSupport
import Testing
@testable import PinStore

/// A fleet must look like a trickle to the list server: conditional requests, jitter on every
/// schedule, Retry-After honoured, and quick looks again after a refusal's download brought
/// nothing new. The schedule values are driven with dates; the HTTP behaviours go through a
/// real server on 127.0.0.1 and the real URLSession fetcher.
@Suite struct FleetScheduleTests {
    let start = Date(timeIntervalSince1970: 1_893_456_000)

    @Test func aRetryAfterLongerThanTheBackoffIsHonoured() {
        var schedule = RefreshSchedule(listDue: start, periodicInterval: 86_400)
        schedule.downloadFailed(at: start, retryAfter: 600)
        #expect(schedule.dueDate == start + 600)
        #expect(schedule.serverAskedToWait(at: start + 599) == start + 600)
        #expect(schedule.serverAskedToWait(at: start + 600) == nil)
    }

    @Test func aRetryAfterOfDaysIsCappedAtAnHour() {
        var schedule = RefreshSchedule(listDue: start, periodicInterval: 7 * 86_400)
        schedule.downloadFailed(at: start, retryAfter: 7 * 86_400)
        #expect(schedule.dueDate == start + RefreshSchedule.maximumRetryAfter)
    }

    @Test func aBackoffAfterPlainFailuresDoesNotHoldRefusalsBack() {
        var schedule = RefreshSchedule(listDue: start, periodicInterval: 7 * 86_400)
        for failure in 0..<14 { schedule.downloadFailed(at: start + TimeInterval(failure)) }
        #expect(schedule.dueDate > start + 86_400)
        #expect(schedule.serverAskedToWait(at: start + 60) == nil)
    }

    @Test func jitterStretchesTheBackoffButNeverShortensIt() {
        var early = RefreshSchedule(listDue: start, periodicInterval: 86_400)
        var late = early
        early.downloadFailed(at: start, jitter: 0)
        late.downloadFailed(at: start, jitter: 1)
        #expect(early.dueDate == start + 60)
        #expect(late.dueDate == start + 75)
    }

    @Test func jitterBringsTheNextUpdateForwardByAtMostATenth() {
        let next = start + 10_000
        #expect(RefreshSchedule.jittered(next, now: start, earliest: start + 60, jitter: 0) == next)
        #expect(RefreshSchedule.jittered(next, now: start, earliest: start + 60, jitter: 1) == start + 9_000)
        #expect(RefreshSchedule.jittered(start + 100, now: start, earliest: start + 95, jitter: 1) == start + 95)
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDate() {
        #expect(ListUpdater.retryAfterSeconds("120", now: start) == 120)
        // 2030-01-01T00:02:00Z, two minutes after `start`.
        #expect(ListUpdater.retryAfterSeconds("Tue, 01 Jan 2030 00:02:00 GMT", now: start) == 120)
        #expect(ListUpdater.retryAfterSeconds("soon", now: start) == nil)
        #expect(ListUpdater.retryAfterSeconds("-5", now: start) == nil)
        #expect(ListUpdater.retryAfterSeconds(String(repeating: "9", count: 40), now: start) == nil)
    }
}

@Suite struct QuickRefusalRetryTests {
    let start = Date(timeIntervalSince1970: 1_893_456_000)

    @Test func anUnchangedRefusalDownloadAllowsAnotherWithinThirtySeconds() {
        var budget = RefusalBudget(interval: 60)
        let allowed1 = budget.spend(at: start)
        #expect(allowed1)
        budget.downloadEnded(at: start + 1, outcome: .unchanged, byRefusal: true, jitter: 0.5)
        let allowed2 = budget.spend(at: start + 20)
        #expect(!allowed2)
        let allowed3 = budget.spend(at: start + 21)
        #expect(allowed3)
    }

    @Test func quickRetriesEndAfterThree() {
        var budget = RefusalBudget(interval: 60)
        var now = start
        for _ in 0..<RefusalBudget.quickRetries {
            let allowed4 = budget.spend(at: now)
        #expect(allowed4)
            budget.downloadEnded(at: now, outcome: .unchanged, byRefusal: true, jitter: 0)
            now += RefusalBudget.quickDelay
        }
        let allowed5 = budget.spend(at: now)
        #expect(allowed5)
        budget.downloadEnded(at: now, outcome: .unchanged, byRefusal: true, jitter: 0)
        let allowed6 = budget.spend(at: now + 59)
        #expect(!allowed6)
        let allowed7 = budget.spend(at: now + 60)
        #expect(allowed7)
    }

    @Test func aNewListRestoresTheQuickRetries() {
        var budget = RefusalBudget(interval: 60)
        _ = budget.spend(at: start)
        budget.downloadEnded(at: start, outcome: .unchanged, byRefusal: true, jitter: 0)
        _ = budget.spend(at: start + 10)
        budget.downloadEnded(at: start + 10, outcome: .newList, byRefusal: true, jitter: 0)
        #expect(budget.quickRetriesLeft == RefusalBudget.quickRetries)
    }

    @Test func aFailedDownloadWaitsTheWholeInterval() {
        var budget = RefusalBudget(interval: 60)
        _ = budget.spend(at: start)
        budget.downloadEnded(at: start, outcome: .failed, byRefusal: true, jitter: 0)
        let allowed8 = budget.spend(at: start + 30)
        #expect(!allowed8)
    }

    @Test func aScheduledDownloadSpendsNoQuickRetry() {
        var budget = RefusalBudget(interval: 60)
        budget.downloadEnded(at: start, outcome: .unchanged, byRefusal: false, jitter: 0)
        #expect(budget.quickRetriesLeft == RefusalBudget.quickRetries)
    }
}

extension PinStoreEndToEndTests {
    @Test func anUnchangedListCostsA304AndChangesNothing() async throws {
        let list = try StoreFixtures.list("static-good.json")
        let asked = Locked<[String]>([])
        try await withServer({ request in
            let condition = request.header("If-None-Match")
            asked.withLock { $0.append(condition ?? "(none)") }
            if condition == "\"v1\"" { return ListServerResponse(status: 304) }
            return ListServerResponse(headers: [("ETag", "\"v1\""), ("Last-Modified", "Tue, 01 Jan 2030 00:00:00 GMT")], body: list)
        }) { server, directory in
            let store = try store(server, directory: directory)
            #expect(await store.update() == .ok)
            let generation = store.listGeneration
            let stored = try Data(contentsOf: store.configuration.storeFileURL)
            let report = await store.updateWithReport(mode: .forced)
            #expect(report.result == .ok)
            #expect(report.activity == .notModified)
            #expect(store.listGeneration == generation)
            #expect(try Data(contentsOf: store.configuration.storeFileURL) == stored)
        }
        #expect(asked.withLock { $0 } == ["(none)", "\"v1\""])
    }

    @Test func aNotModifiedAnswerToAnUnconditionalRequestIsAFailure() async throws {
        try await withServer({ _ in ListServerResponse(status: 304) }) { server, directory in
            let store = try store(server, directory: directory)
            let report = await store.updateWithReport(mode: .forced)
            #expect(report.result == .networkError)
        }
    }

    @Test func a503WithRetryAfterKeepsThePinsAndHoldsRefusalDownloadsBack() async throws {
        let list = try StoreFixtures.list("static-good.json")
        let busy = Locked(false)
        let requests = Locked(0)
        try await withServer({ _ in
            requests.withLock { $0 += 1 }
            return busy.withLock { $0 } ? ListServerResponse(status: 503, headers: [("Retry-After", "300")]) : ListServerResponse(body: list)
        }) { server, directory in
            let clock = ManualClock.inValidPeriod()
            var configuration = try StoreFixtures.configuration(directory: directory.url, serviceURL: server.baseURL.appendingPathComponent("list.json"))
            configuration.requestTimeout = 30
            let store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
            #expect(await store.update() == .ok)
            busy.withLock { $0 = true }
            let report = await store.updateWithReport(mode: .forced)
            #expect(report.result == .networkError)
            #expect(report.error?.description.contains("Retry-After") == true)
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
            #expect(store.nextUpdateDate >= clock.now() + 300)
            // A refusal two minutes later does not go to the server: it asked for five.
            clock.advance(120)
            let before = requests.withLock { $0 }
            #expect(await store.updateAfterRefusal(decidedUnder: nil) == nil)
            #expect(requests.withLock { $0 } == before)
        }
    }

    @Test func storesThatApplyAListTogetherScheduleTheirNextDownloadApart() async throws {
        let list = try StoreFixtures.list("static-good.json")
        try await withServer({ _ in ListServerResponse(body: list) }) { server, directory in
            var dates: [Date] = []
            for (index, jitter) in [0.0, 1.0].enumerated() {
                let folder = directory.url.appendingPathComponent("store-\(index)")
                let configuration = try StoreFixtures.configuration(directory: folder, serviceURL: server.baseURL.appendingPathComponent("list.json"))
                let store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: ManualClock.inValidPeriod(),
                                         jitter: { jitter })
                #expect(await store.update() == .ok)
                dates.append(store.nextUpdateDate)
            }
            #expect(dates[1] < dates[0])
        }
    }
}
