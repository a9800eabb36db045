import Foundation
import Logging
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The store file is read only when it is what the store wrote: a regular file, not a link,
/// not writable by others, not larger than a list can be.
@Suite struct StoreFileSafetyTests {
    /// Writes a good store file into `directory` through a real update.
    func writeGoodStoreFile(in directory: URL) async throws -> URL {
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory)
        try #require(await store.update() == .ok)
        return store.configuration.storeFileURL
    }

    /// A store that never downloads, so what it answers comes from the file alone.
    func storeLoadingFrom(_ directory: URL, logger: Logger? = nil) throws -> PinStore {
        let fetcher = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "offline") }
        return try PinStore(configuration: try StoreFixtures.configuration(directory: directory), fetcher: fetcher,
                            clock: ManualClock.inValidPeriod(), logger: logger)
    }

    @Test func aRegularStoreFileLoads() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        _ = try await writeGoodStoreFile(in: directory.url)
        let store = try storeLoadingFrom(directory.url)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func aStoreFileThatIsASymlinkIsNotFollowed() async throws {
        let elsewhere = try TemporaryDirectory(), directory = try TemporaryDirectory()
        defer { elsewhere.cleanUp(); directory.cleanUp() }
        let target = try await writeGoodStoreFile(in: elsewhere.url)
        let link = try StoreFixtures.configuration(directory: directory.url).storeFileURL
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let store = try storeLoadingFrom(directory.url)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func aSymlinkToAHugeFileIsRefusedWithoutReadingIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let file = PersistentListFile(url: directory.url.appendingPathComponent("store.json"), maximumSize: 1024)
        let huge = directory.url.appendingPathComponent("huge")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: 1 << 30)   // sparse: 1 GiB that costs no disk
        try handle.close()
        try FileManager.default.createSymbolicLink(at: file.url, withDestinationURL: huge)
        #expect(throws: PinStoreError.self) { _ = try file.load() }
    }

    @Test func aStoreFileWritableByOthersIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = try await writeGoodStoreFile(in: directory.url).path
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: path)
        let store = try storeLoadingFrom(directory.url)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func aStorageFolderWritableByOthersIsReportedAsAWarning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        _ = try await writeGoodStoreFile(in: directory.url)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.url.path)
        let (logger, records) = RecordingLogHandler.logger()
        let store = try storeLoadingFrom(directory.url, logger: logger)
        #expect(records.all.contains { $0.level == .warning && $0.message.contains("writable by group or others") })
        // A warning, not a refusal: the verified pins still load.
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func aPrivateStorageFolderGivesNoWarning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        _ = try await writeGoodStoreFile(in: directory.url)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.url.path)
        let (logger, records) = RecordingLogHandler.logger()
        _ = try storeLoadingFrom(directory.url, logger: logger)
        #expect(!records.all.contains { $0.level == .warning })
    }

    @Test func temporaryFilesLeftByAKilledSaveAreRemovedOnceStale() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let storeFile = try await writeGoodStoreFile(in: directory.url)
        let stale = directory.url.appendingPathComponent(".\(storeFile.lastPathComponent).1234.tmp")
        let fresh = directory.url.appendingPathComponent(".\(storeFile.lastPathComponent).5678.tmp")
        try Data("partial".utf8).write(to: stale)
        try Data("partial".utf8).write(to: fresh)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: stale.path)
        _ = try storeLoadingFrom(directory.url)
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        // A save under way in another process keeps its file.
        #expect(FileManager.default.fileExists(atPath: fresh.path))
    }
}
