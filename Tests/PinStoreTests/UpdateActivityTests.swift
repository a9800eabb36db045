import Foundation
import Testing
@testable import PinStore

/// `UpdateReport.activity`: what an update did, so "the list was downloaded" is never logged
/// for an update that kept the list in force; and the configurable interval between
/// refusal-triggered downloads.
@Suite struct UpdateActivityTests {
    static func fetcher() throws -> ScriptedFetcher { ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")) }

    @Test func aFirstUpdateDownloads() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(try Self.fetcher(), directory: directory.url)
        let report = await store.updateWithReport()
        #expect(report.result == .ok)
        #expect(report.activity == .downloaded)
    }

    @Test func anUpdateWithNothingDueSaysSoAndDownloadsNothing() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = try Self.fetcher()
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        let report = await store.updateWithReport()
        #expect(report.result == .ok)
        #expect(report.activity == .notDue)
        #expect(fetcher.requestCount == 1)
    }

    @Test func aDueUpdateSaysItStartedInTheBackground() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let store = try StoreFixtures.store(try Self.fetcher(), directory: directory.url, clock: clock)
        _ = await store.update()
        clock.advance(7 * 86_400 + 1)
        #expect(await store.updateWithReport().activity == .startedInBackground)
    }

    @Test func aForcedUpdateDownloads() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = try Self.fetcher()
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        #expect(await store.updateWithReport(mode: .forced).activity == .downloaded)
        #expect(fetcher.requestCount == 2)
    }

    @Test func aFailedDownloadSaysItWentToTheServer() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "down") }
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        let report = await store.updateWithReport()
        #expect(report.result == .networkError)
        #expect(report.activity == .downloaded)
    }

    @Test func aScheduledUpdateAdoptingAnotherProcesssListSaysSo() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let laggingFetcher = try Self.fetcher()
        let lagging = try StoreFixtures.store(laggingFetcher, directory: directory.url, clock: clock)
        _ = await lagging.update()
        clock.advance(7 * 86_400 + 1)
        // Another worker sharing the directory downloads first.
        let first = try StoreFixtures.store(try Self.fetcher(), directory: directory.url, clock: clock)
        #expect(await first.update(mode: .forced) == .ok)
        let report = await lagging.updater.scheduledUpdate()
        #expect(report?.result == .ok)
        #expect(report?.activity == .adoptedFromStoreFile)
        #expect(laggingFetcher.requestCount == 1)
    }

    // MARK: - Refusal-triggered downloads

    @Test func theRefusalDownloadIntervalIsConfiguration() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = try Self.fetcher()
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.refusalUpdateInterval = 5
        let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: clock)
        #expect(await store.updateAfterRefusal() != nil)
        #expect(await store.updateAfterRefusal() == nil)
        clock.advance(5)
        #expect(await store.updateAfterRefusal() != nil)
        #expect(fetcher.requestCount == 2)
    }

    @Test func aRefusalDownloadIntervalUnderASecondIsRefused() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        for interval in [0, 0.5, -1, .nan, .infinity] as [TimeInterval] {
            var configuration = try StoreFixtures.configuration(directory: directory.url)
            configuration.refusalUpdateInterval = interval
            #expect(throws: PinStoreError.self, "\(interval)") { try PinStore(configuration: configuration, fetcher: try Self.fetcher()) }
        }
    }
}
