import Foundation
import Logging
import PinStoreTestSupport
import Testing
@testable import PinStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store file is data someone else may have put there: it is read only when its owner is the
/// store's own user (or root), and its unsigned dates never delay a process's first download
/// beyond the configured periodic interval.
@Suite struct StoreFileTrustTests {
    static let now = ManualClock.inValidPeriod().now()
    static let week: TimeInterval = 7 * 86_400   // the default periodicUpdateInterval

    /// A good store file, written by a real update at `savedAt`, in `directory`.
    static func writeStoreFile(in directory: URL, savedAt: Date = now) async throws -> URL {
        let clock = ManualClock(savedAt)
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory, clock: clock)
        try #require(await store.update() == .ok)
        return store.configuration.storeFileURL
    }

    /// Rewrites fields of the store file in place (its mode and owner stay).
    static func edit(_ url: URL, _ change: (inout [String: Any]) -> Void) throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        change(&object)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: JSONSerialization.data(withJSONObject: object))
        try handle.close()
    }

    /// A store on `directory` whose every download is counted by `fetcher`.
    static func restart(_ directory: URL, fetcher: ScriptedFetcher) throws -> PinStore {
        try PinStore(configuration: try StoreFixtures.configuration(directory: directory), fetcher: fetcher,
                     clock: ManualClock(now))
    }

    @Test(.enabled(if: FileStatus.effectiveUser == 0, "giving a file to another user needs root"))
    func aStoreFileOwnedByAnotherUserIsIgnoredWithAWarning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url)
        try #require(chown(url.path, 65_534, 65_534) == 0)   // nobody:nogroup
        let (logger, records) = RecordingLogHandler.logger()
        let store = try PinStore(configuration: try StoreFixtures.configuration(directory: directory.url),
                                 fetcher: ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "offline") },
                                 clock: ManualClock(Self.now), logger: logger)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
        #expect(records.all.contains { $0.level == .warning && $0.message.contains("ignoring the stored fingerprint list") })
    }

    @Test(.enabled(if: FileStatus.effectiveUser == 0, "giving a file to another user needs root"))
    func theRefusalOfAnotherUsersStoreFileNamesTheOwner() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url)
        try #require(chown(url.path, 65_534, 65_534) == 0)
        let error = #expect(throws: PinStoreError.self) { _ = try PersistentListFile(url: url, maximumSize: 1 << 20).load() }
        #expect(error?.description.contains("belongs to user 65534") == true)
    }

    @Test(.enabled(if: FileStatus.effectiveUser == 0, "giving a file to root needs root"))
    func aStoreFileOwnedByRootLoads() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url)
        try #require(chown(url.path, 0, 0) == 0)
        let store = try Self.restart(directory.url, fetcher: ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "offline") })
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func aFreshStoreFileKeepsItsScheduleAcrossARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url, savedAt: Self.now.addingTimeInterval(-3_600))
        try Self.edit(url) { $0["nextUpdate"] = Self.now.addingTimeInterval(86_400).timeIntervalSince1970 }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try Self.restart(directory.url, fetcher: fetcher)
        #expect(store.nextUpdateDate == Self.now.addingTimeInterval(86_400))
        #expect(await store.update() == .ok)
        #expect(fetcher.requestCount == 0)
    }

    @Test func aStoreFileDownloadedLongerAgoThanThePeriodicIntervalIsDueAtStartUp() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        // An old file whose unsigned nextUpdate was pushed far out (planted, or restored from a backup).
        let url = try await Self.writeStoreFile(in: directory.url, savedAt: Self.now.addingTimeInterval(-30 * 86_400))
        try Self.edit(url) { $0["nextUpdate"] = Self.now.addingTimeInterval(6 * 86_400).timeIntervalSince1970 }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try Self.restart(directory.url, fetcher: fetcher)
        #expect(store.nextUpdateDate <= Self.now)
        #expect(await store.update() == .ok)   // a silent update: it starts in the background
        _ = try await pollUntil(every: .milliseconds(10)) { fetcher.requestCount > 0 }
        #expect(fetcher.requestCount == 1)
    }

    @Test func aStoreFileWithoutADownloadDateIsDueAtStartUp() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url)
        try Self.edit(url) { $0["updatedAt"] = nil; $0["nextUpdate"] = Self.now.addingTimeInterval(86_400).timeIntervalSince1970 }
        let store = try Self.restart(directory.url, fetcher: ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")))
        #expect(store.nextUpdateDate <= Self.now)
    }

    @Test func aStoreFileDownloadedInTheFutureIsDueAtStartUp() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let url = try await Self.writeStoreFile(in: directory.url)
        try Self.edit(url) { $0["updatedAt"] = Self.now.addingTimeInterval(86_400).timeIntervalSince1970 }
        let store = try Self.restart(directory.url, fetcher: ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")))
        #expect(store.nextUpdateDate <= Self.now)
    }

    @Test func aSignedTimestampOlderThanThePeriodicIntervalMakesAStoredListDue() {
        // The file claims a download an hour ago; the list itself was signed 30 days ago.
        let file = PersistedList(mode: .challenge, body: Data(), nextUpdate: Self.now.addingTimeInterval(Self.week).timeIntervalSince1970,
                                 updatedAt: Self.now.addingTimeInterval(-3_600).timeIntervalSince1970)
        let signed = Int64(Self.now.addingTimeInterval(-30 * 86_400).timeIntervalSince1970)
        let due = RefreshSchedule.dueDate(ofListFromFile: file, signedTimestamp: signed, now: Self.now, periodicInterval: Self.week)
        #expect(due <= Self.now)
    }
}
