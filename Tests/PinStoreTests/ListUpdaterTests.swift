import Foundation
import MetricsTestKit
import Logging
import PinStoreDevServer
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// An updater on its own, without a store: a scripted or real fetcher, a manual clock, and the
/// read state it writes (what a ``PinStore`` would read).
struct UpdaterHarness {
    let updater: ListUpdater
    let inForce: Locked<PinStore.State>
    /// How many times the updater said the list in force changed.
    let changes = Locked(0)

    init(_ fetcher: any FingerprintListFetcher, directory: URL, clock: ManualClock,
         configuration: PinStore.Configuration? = nil) throws {
        let configuration = try configuration ?? StoreFixtures.configuration(directory: directory)
        let (keys, _, _) = try configuration.validated()
        inForce = Locked(PinStore.State())
        updater = ListUpdater(configuration: configuration, configuredKeys: keys, fetcher: fetcher, clock: clock,
                              logger: Logger(label: "tests", factory: { _ in SwiftLogNoOpLogHandler() }),
                              metrics: PinStoreMetrics(identifier: "tests", factory: TestMetrics()),
                              inForce: inForce)
        let changes = changes
        updater.connect(ListUpdater.Hooks(listChanged: { _ in changes.withLock { $0 += 1 } }))
        updater.loadSaved()
    }

    var stored: PinStore.StoredList? { updater.trust.withLock { $0.inForce?.list } }
    var generation: UInt64 { inForce.withLock { $0.list.generation } }
    var publishedDue: Date { inForce.withLock { $0.updateDue } }
    var changeCount: Int { changes.withLock { $0 } }
}

@Suite struct ListUpdaterTests {
    @Test func aVerifiedDownloadGoesInForceInTheReadStateWithTheNextGeneration() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let harness = try UpdaterHarness(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")),
                                         directory: directory.url, clock: .inValidPeriod())
        #expect(harness.stored == nil)
        let report = await harness.updater.update(mode: .default)
        #expect(report.result == .ok, "\(report.error?.description ?? "")")
        #expect(harness.stored?.index.entries.isEmpty == false)
        #expect(harness.generation == 1)
        #expect(harness.changeCount == 1)
    }

    @Test func concurrentUpdatesShareTheOneDownloadUnderWay() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"), delay: .milliseconds(200))
        let harness = try UpdaterHarness(fetcher, directory: directory.url, clock: .inValidPeriod())
        async let first = harness.updater.update(mode: .forced)
        async let second = harness.updater.update(mode: .forced)
        let results = await [first.result, second.result]
        #expect(results == [.ok, .ok])
        #expect(fetcher.requestCount == 1)
    }

    @Test func aRefusedListLeavesTheListInForceAndItsFileUntouched() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let harness = try UpdaterHarness(fetcher, directory: directory.url, clock: .inValidPeriod())
        try #require(await harness.updater.update(mode: .default).result == .ok)
        let before = (identity: harness.stored?.identity, generation: harness.generation)
        let savedBefore = try Data(contentsOf: harness.updater.file.url)
        // The same pins signed with a key the configuration does not trust.
        let forged = try TestLists.signedStatic([try SignedLists.entry("localhost")], key: try StoreFixtures.otherSigningKey())
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: forged) }
        let report = await harness.updater.update(mode: .forced)
        #expect(report.result == .invalidSignature)
        #expect(report.error?.code == .invalidListSignature)
        #expect(harness.stored?.identity == before.identity)
        #expect(harness.generation == before.generation)
        #expect(harness.changeCount == 1)
        #expect(try Data(contentsOf: harness.updater.file.url) == savedBefore)
    }

    @Test func aFailedDownloadPublishesItsBackoffToTheReadState() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let harness = try UpdaterHarness(fetcher, directory: directory.url, clock: clock)
        try #require(await harness.updater.update(mode: .default).result == .ok)
        #expect(harness.publishedDue == harness.updater.nextUpdateDate)
        clock.set(harness.updater.nextUpdateDate)
        fetcher.answer { _ throws(PinStoreError) in throw PinStoreError(.network, "down") }
        #expect(await harness.updater.update(mode: .forced).result == .networkError)
        // The first retry a minute later, and a decision reading the read state sees it.
        #expect(harness.updater.nextUpdateDate == clock.now().addingTimeInterval(RefreshSchedule.firstRetryDelay))
        #expect(harness.publishedDue == harness.updater.nextUpdateDate)
    }

    @Test func aSecondUpdaterOnTheSameFolderStartsWithTheListTheFirstSaved() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let first = try UpdaterHarness(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")),
                                       directory: directory.url, clock: .inValidPeriod())
        try #require(await first.updater.update(mode: .default).result == .ok)
        let offline = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "offline") }
        let second = try UpdaterHarness(offline, directory: directory.url, clock: .inValidPeriod())
        #expect(second.stored?.identity == first.stored?.identity)
        #expect(second.changeCount == 1)
        #expect(offline.requestCount == 0)
    }

    @Test func theScheduleLoopDownloadsWhenTheListIsDueAndStopsWhenCancelled() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let harness = try UpdaterHarness(fetcher, directory: directory.url, clock: clock)
        let loop = Task { await harness.updater.runSchedule() }
        // Nothing in force: due at once; then the loop sleeps until the list's next update.
        let wake = try #require(await clock.nextWake())
        #expect(fetcher.requestCount == 1)
        #expect(harness.stored != nil)
        clock.set(harness.updater.nextUpdateDate)
        _ = try await pollUntil(every: .milliseconds(1)) { fetcher.requestCount >= 2 }
        #expect(fetcher.requestCount == 2)
        #expect(wake <= harness.updater.nextUpdateDate)
        loop.cancel()
        await loop.value
    }

    @Test func anUpdaterDownloadsFromAListServerOnLoopback() async throws {
        let body = try StoreFixtures.list("static-good.json")
        let server = try await ListServer.start(responder: ListResponders.staticList(body))
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        do {
            let configuration = try StoreFixtures.configuration(directory: directory.url,
                                                                serviceURL: server.baseURL.appendingPathComponent("list.json"))
            let harness = try UpdaterHarness(URLSessionListFetcher(), directory: directory.url, clock: .inValidPeriod(),
                                             configuration: configuration)
            let report = await harness.updater.update(mode: .default)
            #expect(report.result == .ok, "\(report.error?.description ?? "")")
            #expect(report.activity == .downloaded)
            #expect(server.requestCount == 1)
            #expect(harness.stored?.index.entries.contains { $0.name == "localhost" } == true)
            // Persistence is the updater's too: the list it verified is in the store file.
            #expect(try harness.updater.file.load()?.body == body)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// Every decision reads the list and the per-domain switch that came with it in one
    /// snapshot: with lists landing back to back, no snapshot pairs one list's pins with
    /// another list's `domainsConfig`.
    @Test func aSnapshotNeverMixesTwoLists() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let key = try StoreFixtures.signingKey()
        let serial = Locked<Int64>(0)
        let fetcher = ScriptedFetcher { request throws(PinStoreError) in
            let n = serial.withLock { $0 += 1; return $0 }
            let host = "host-\(n).pinstore.test"
            let config = #"{"sslPinningRequiredForUnlisted": true, "domains": [{"name": "\#(host)", "sslPinningRequired": true}]}"#
            let body: Data
            do {
                let entry = try SignedLists.entry("localhost", name: host)
                body = DomainsConfigTests.inserting(config, into: try FingerprintListSigner.challengeModeBody([entry], timestamp: 1_893_456_000 + n))
            } catch {
                throw PinStoreError(.invalidListData, "\(error)")
            }
            return try ScriptedFetcher.challengeResponder(body, key: key)(request)
        }
        let store = try StoreFixtures.store(fetcher, directory: directory.url, useChallenge: true)
        try #require(await store.update() == .ok)
        // The reader is a thread of its own that pauses between reads: a busy task would hold
        // one of the few cooperative threads the rest of the suite shares.
        let reading = Locked(true)
        let mixed = Locked(0)
        let reader = Thread {
            while reading.withLock({ $0 }) {
                let snapshot = store.pinSnapshot()
                let pinned = Set(snapshot.listInForce.index?.entries.map(\.name) ?? [])
                let switched = Set(snapshot.listInForce.domainsConfig?.domains.keys.map { $0 } ?? [])
                if pinned != switched { mixed.withLock { $0 += 1 } }
                usleep(10)
            }
        }
        reader.start()
        var updates: [PinStore.UpdateResult] = []
        for _ in 0..<40 { updates.append(await store.update(mode: .forced)) }
        reading.withLock { $0 = false }
        #expect(updates.allSatisfy { $0 == .ok })
        #expect(mixed.withLock { $0 } == 0)
        #expect(fetcher.requestCount == 41)
    }
}

/// How often refusals may start downloads, as a value driven with dates.
@Suite struct RefusalBudgetTests {
    let start = Date(timeIntervalSince1970: 1_893_456_000)

    @Test func theFirstRefusalMayDownload() {
        var budget = RefusalBudget(interval: 60)
        let allowed = budget.spend(at: start)
        #expect(allowed)
        #expect(budget.lastStart == start)
    }

    @Test func aSecondRefusalWithinTheIntervalIsHeldBack() {
        var budget = RefusalBudget(interval: 60)
        _ = budget.spend(at: start)
        let allowed = budget.spend(at: start.addingTimeInterval(59))
        #expect(!allowed)
        #expect(budget.lastStart == start)
    }

    @Test func aRefusalOneIntervalAfterTheLastStartMayDownloadAgain() {
        var budget = RefusalBudget(interval: 60)
        _ = budget.spend(at: start)
        let allowed = budget.spend(at: start.addingTimeInterval(60))
        #expect(allowed)
    }

    @Test func aClockThatWentBackDoesNotHoldRefusalDownloadsBack() {
        var budget = RefusalBudget(interval: 60)
        _ = budget.spend(at: start)
        let allowed = budget.spend(at: start.addingTimeInterval(-3_600))
        #expect(allowed)
    }
}

/// Whether a verified list may replace the one in force: pure, no store, no network.
@Suite struct ListAcceptanceTests {
    let now = Date(timeIntervalSince1970: 1_893_456_000)

    func verified(version: Int64? = nil, timestamp: Int64? = nil, expires: Int64? = nil,
                  entries: [FingerprintEntry]? = nil) throws -> PinStore.VerifiedList {
        PinStore.VerifiedList(persisted: PersistedList(mode: .static, body: Data(), nextUpdate: 0),
                              entries: try entries ?? [SignedLists.entry("localhost")], timestamp: timestamp,
                              version: version, expires: expires)
    }

    func inForce(version: Int64? = nil, timestamp: Int64? = nil) -> PinStore.StoredList {
        PinStore.StoredList(index: PinIndex(entries: []), timestamp: timestamp, updatedAt: nil, identity: Data(), version: version)
    }

    @Test func aHigherVersionReplacesTheListInForce() throws {
        #expect(try ListAcceptance.check(verified(version: 3), against: inForce(version: 2), at: now))
    }

    @Test func theVersionInForceAgainIsNothingToDo() throws {
        #expect(try !ListAcceptance.check(verified(version: 2), against: inForce(version: 2), at: now))
    }

    @Test func aLowerVersionIsRefusedAsARollback() throws {
        let error = #expect(throws: PinStoreError.self) { try ListAcceptance.check(verified(version: 1), against: inForce(version: 2), at: now) }
        #expect(error?.code == .rollback)
    }

    @Test func aStaticListWithoutAWholeListSignatureAfterASignedOneIsAMissingSignature() throws {
        let error = #expect(throws: PinStoreError.self) { try ListAcceptance.check(verified(), against: inForce(version: 2, timestamp: 100), at: now) }
        #expect(error?.code == .invalidListSignature)
    }

    @Test func anOlderSignedTimestampIsRefused() throws {
        let error = #expect(throws: PinStoreError.self) {
            try ListAcceptance.check(verified(timestamp: 99), against: inForce(timestamp: 100), at: now)
        }
        #expect(error?.code == .invalidListData)
    }

    @Test func aListIsRefusedFromTheSecondItsExpiresIsReached() throws {
        let expires = Int64(now.timeIntervalSince1970)
        #expect(try ListAcceptance.check(verified(expires: expires), against: nil, at: now.addingTimeInterval(-1)))
        let error = #expect(throws: PinStoreError.self) { try ListAcceptance.check(verified(expires: expires), against: nil, at: now) }
        #expect(error?.code == .expired)
    }

    @Test func aListWhoseEntriesAllExpiredIsRefusedAsEmpty() throws {
        let expired = try SignedLists.entry("localhost", expires: Int64(now.timeIntervalSince1970) - 1)
        let error = #expect(throws: PinStoreError.self) { try ListAcceptance.validEntries(of: verified(entries: [expired]), at: now) }
        #expect(error?.code == .noValidEntries)
    }
}
