import Foundation
import Testing
@testable import PinStore
import PinStoreSigning
import PinStoreTestSupport

/// A list a fleet delivers as a file (a Kubernetes ConfigMap volume, a synced folder): real
/// files, real signatures, the store's own default fetcher, and no HTTP anywhere.
@Suite struct FileListSourceTests {
    /// A list signed by key 0 of `ring`, stamped now (these stores run on the real clock).
    static func list(_ ring: KeyRing, signer: Int = 0, entries: [FingerprintEntry], version: Int64) throws -> Data {
        try Rotation.list(ring, signers: [signer], entries: entries, version: version,
                          timestamp: Int64(Date().timeIntervalSince1970))
    }

    static func configuration(_ ring: KeyRing, list: URL, storage: URL) throws -> PinStore.Configuration {
        var configuration = PinStore.Configuration(serviceURL: list, publicKey: try ring.publicKey(0),
                                                   identifier: "fleet", storageDirectory: storage)
        configuration.listFileCheckInterval = 0.1
        return configuration
    }

    /// A folder laid out as Kubernetes lays out a ConfigMap volume: `list.json -> ..data/list.json`,
    /// `..data -> ..<generation>`; `publish` swaps `..data` to a new generation in one rename.
    struct ConfigMapVolume {
        let root: URL
        private(set) var generation = 0
        var listURL: URL { root.appendingPathComponent("list.json") }

        init(root: URL) throws {
            self.root = root
            try FileManager.default.createSymbolicLink(atPath: listURL.path, withDestinationPath: "..data/list.json")
        }

        mutating func publish(_ body: Data) throws {
            generation += 1
            let folder = "..generation_\(generation)"
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: false)
            try body.write(to: root.appendingPathComponent(folder).appendingPathComponent("list.json"))
            let staged = root.appendingPathComponent("..data_tmp")
            try FileManager.default.createSymbolicLink(atPath: staged.path, withDestinationPath: folder)
            // rename(2) replaces the old link atomically, as the kubelet does.
            guard rename(staged.path, root.appendingPathComponent("..data").path) == 0 else {
                throw CocoaError(.fileWriteUnknown)
            }
        }
    }

    /// Waits until `condition` holds (``HangGuard`` bounds a stuck test); the store's run loop
    /// works on its own time.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        try await pollUntil(condition)
    }

    @Test func aStoreGivenAFileURLReadsTheSignedListWithoutAFetcher() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let file = directory.url.appendingPathComponent("list.json")
        try Self.list(ring, entries: [Rotation.pinned], version: 1).write(to: file)
        let store = try PinStore(configuration: Self.configuration(ring, list: file, storage: directory.url))

        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .ok, "\(String(describing: report.error))")
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func aFileReadIsReportedAsReadFromFileNotAsADownload() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let file = directory.url.appendingPathComponent("list.json")
        try Self.list(ring, entries: [Rotation.pinned], version: 1).write(to: file)
        let store = try PinStore(configuration: Self.configuration(ring, list: file, storage: directory.url))
        let read = await store.updateWithReport(mode: .forced)
        #expect(read.result == .ok, "\(String(describing: read.error))")
        #expect(read.activity == .readFromFile)
        // A failed read too: nothing was downloaded.
        try FileManager.default.removeItem(at: file)
        let missing = await store.updateWithReport(mode: .forced)
        #expect(missing.result != .ok)
        #expect(missing.activity == .readFromFile)
    }

    @Test(.timeLimit(.minutes(10)))
    func runFollowsAConfigMapSwapWithNoRestart() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let volumeFolder = directory.url.appendingPathComponent("volume")
        try FileManager.default.createDirectory(at: volumeFolder, withIntermediateDirectories: false)
        var volume = try ConfigMapVolume(root: volumeFolder)
        try volume.publish(Self.list(ring, entries: [Rotation.pinned], version: 1))
        let store = try PinStore(configuration: Self.configuration(ring, list: volume.listURL, storage: directory.url))

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            #expect(try await Self.eventually { store.storedEntries == [Rotation.pinned] })
            try volume.publish(Self.list(ring, entries: [Rotation.other], version: 2))
            #expect(try await Self.eventually { store.storedEntries == [Rotation.other] })
            group.cancelAll()
        }
    }

    @Test func aFileSignedByAnotherKeyLeavesTheListInForceAndSaysWhy() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        let file = directory.url.appendingPathComponent("list.json")
        try Self.list(ring, entries: [Rotation.pinned], version: 1).write(to: file)
        let store = try PinStore(configuration: Self.configuration(ring, list: file, storage: directory.url))
        try #require(await store.update(mode: .forced) == .ok)

        try Self.list(ring, signer: 1, entries: [Rotation.other], version: 2).write(to: file)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .invalidListSignature)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test func aMissingFileIsReportedAndKeepsThePins() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let file = directory.url.appendingPathComponent("list.json")
        try Self.list(ring, entries: [Rotation.pinned], version: 1).write(to: file)
        let store = try PinStore(configuration: Self.configuration(ring, list: file, storage: directory.url))
        try #require(await store.update(mode: .forced) == .ok)

        try FileManager.default.removeItem(at: file)
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.error?.code == .network)
        #expect(report.error?.reason.contains("does not exist") == true)
        #expect(store.storedEntries == [Rotation.pinned])
    }

    @Test(.timeLimit(.minutes(10)))
    func aFIFOAtTheListPathIsRefusedWithoutBlocking() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let file = directory.url.appendingPathComponent("list.json")
        try #require(mkfifo(file.path, 0o600) == 0)

        let request = FingerprintListRequest(url: file)
        await #expect(throws: PinStoreError.self) { try await FileListFetcher().fetch(request) }
        do {
            _ = try await FileListFetcher().fetch(request)
        } catch {
            #expect(error.reason.contains("not a regular file"))
        }
    }

    @Test func aFileLargerThanTheLimitIsNotRead() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let file = directory.url.appendingPathComponent("list.json")
        try Data(repeating: 0x20, count: 4097).write(to: file)
        let request = FingerprintListRequest(url: file, maximumBodySize: 4096)
        do {
            _ = try await FileListFetcher().fetch(request)
            Issue.record("a file past the limit was read")
        } catch {
            #expect(error.code == .invalidListData)
        }
    }

    @Test func aFileListCannotBeInChallengeMode() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        var configuration = try Self.configuration(ring, list: directory.url.appendingPathComponent("list.json"), storage: directory.url)
        configuration.useChallenge = true
        #expect(throws: PinStoreError.self) { try PinStore(configuration: configuration) }
    }

    @Test func aRelativeFileURLIsRefused() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 1)
        let relative = try #require(URL(string: "file:list.json"))
        let configuration = try Self.configuration(ring, list: relative, storage: directory.url)
        #expect(throws: PinStoreError.self) { try PinStore(configuration: configuration) }
    }
}
