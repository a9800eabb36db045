import Foundation
import Testing
import PinStore
@testable import PinStorePublisher
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder medium as the protocol needs it: exclusive create, bounded reads of regular
/// files only, and content-addressed names that junk cannot take.
@Suite struct PublicationMediumTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("medium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func aNameIsCreatedOnceAndTheFirstWriterWins() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let medium = FolderMedium(url: url)
        #expect(try medium.createExclusively("list-1-a.json", contents: Data("one".utf8)))
        #expect(try medium.createExclusively("list-1-a.json", contents: Data("two".utf8)) == false)
        #expect(try medium.read("list-1-a.json", maximumSize: 100) == Data("one".utf8))
    }

    @Test func anAbsentNameReadsAsNothing() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try FolderMedium(url: url).read("list-1-a.json", maximumSize: 100) == nil)
    }

    @Test func aSymbolicLinkIsRefusedNotFollowed() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let target = url.appendingPathComponent("secret")
        try Data("secret".utf8).write(to: target)
        try FileManager.default.createSymbolicLink(atPath: url.appendingPathComponent("list-1-a.json").path, withDestinationPath: target.path)
        #expect(throws: PublisherError(.proposal, "")) { try FolderMedium(url: url).read("list-1-a.json", maximumSize: 100) }
    }

    @Test func aFileLargerThanTheBoundIsRefusedBeforeItIsRead() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        // A sparse 1 GiB file: reading it would cost 1 GiB of memory.
        let path = url.appendingPathComponent("list-1-a.json").path
        let descriptor = open(path, O_CREAT | O_WRONLY, 0o644)
        #expect(descriptor >= 0)
        #expect(ftruncate(descriptor, 1 << 30) == 0)
        close(descriptor)
        do {
            _ = try FolderMedium(url: url).read("list-1-a.json", maximumSize: 4 << 20)
            Issue.record("a 1 GiB file was read")
        } catch {
            #expect(error.reason.contains("1073741824 bytes"))
        }
    }

    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(mkfifo(url.appendingPathComponent("list-1-a.json").path, 0o644) == 0)
        #expect(throws: PublisherError(.proposal, "")) { try FolderMedium(url: url).read("list-1-a.json", maximumSize: 100) }
    }

    @Test func namesAreListedByPrefixAndSorted() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        let medium = FolderMedium(url: url)
        for name in ["list-2-b.json", "list-2-a.json", "list-20-a.json", "proposal-2-a.json"] {
            _ = try medium.createExclusively(name, contents: Data())
        }
        #expect(try medium.names(withPrefix: "list-2-", limit: 10).names == ["list-2-a.json", "list-2-b.json"])
        let limited = try medium.names(withPrefix: "list-2", limit: 2)
        #expect(limited.names.count == 2 && limited.truncated)
    }

    @Test func aNameThatIsAPathIsNeverWritten() throws {
        let url = try Self.folder()
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(throws: PublisherError(.proposal, "")) { try FolderMedium(url: url).createExclusively("../escape.json", contents: Data()) }
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().appendingPathComponent("escape.json").path))
    }

    @Test func anObjectWhoseBytesDoNotHashToItsNameIsIgnored() throws {
        let medium = InMemoryMedium()
        let shared = SharedProposals(medium: medium)
        let genuine = try shared.finish(3, list: Data("genuine".utf8))
        let wrong = SharedProposals.name(.list, version: 3, bytes: Data("other".utf8))
        #expect(medium.createExclusively(wrong, contents: Data("junk".utf8)))
        let read = shared.lists(3)
        #expect(read.objects.map(\.name) == [genuine])
        #expect(read.ignored.map(\.name) == [wrong])
    }

    @Test func aNameNotOfTheProtocolsFormIsIgnored() throws {
        let medium = InMemoryMedium()
        #expect(medium.createExclusively("list-3-xyz.json", contents: Data()))
        #expect(medium.createExclusively("list-3-\(String(repeating: "A", count: 64)).json", contents: Data()))
        let read = SharedProposals(medium: medium).lists(3)
        #expect(read.objects.isEmpty)
        #expect(read.ignored.count == 2)
    }

    @Test func objectsOfOtherVersionsAreNotRead() throws {
        let medium = InMemoryMedium()
        let shared = SharedProposals(medium: medium)
        try shared.finish(9_223_372_036_854_775_806, list: Data())
        try shared.finish(30, list: Data("thirty".utf8))
        #expect(shared.lists(3).objects.isEmpty && shared.lists(3).ignored.isEmpty)
    }

    @Test func moreObjectsThanTheBoundAreReportedNotRead() throws {
        let medium = InMemoryMedium()
        let shared = SharedProposals(medium: medium)
        for index in 0...SharedProposals.maximumObjectsPerVersion {
            try shared.finish(1, list: Data("\(index)".utf8))
        }
        let read = shared.lists(1)
        #expect(read.truncated)
        #expect(read.objects.count == SharedProposals.maximumObjectsPerVersion)
    }

    @Test func largeJunkObjectsThatSortFirstDoNotHideAnHonestOne() throws {
        let medium = InMemoryMedium()
        let shared = SharedProposals(medium: medium)
        // 40 objects of the largest size a list may have, hashing to their names (anyone can
        // make those): 80 MiB, which a byte budget per look would let hide an honest object.
        for index in 0..<40 {
            try shared.finish(1, list: Data(repeating: UInt8(index), count: SharedProposals.Kind.list.maximumSize))
        }
        let honest = try shared.finish(1, list: Data("honest".utf8))
        var seen: [String] = []
        shared.visit(.list, version: 1) { name, _ in
            seen.append(name)
            return true
        }
        #expect(seen.contains(honest))
    }

    @Test func aNameTakenByOtherBytesIsAnErrorNotAnAssumption() throws {
        let medium = InMemoryMedium()
        let shared = SharedProposals(medium: medium)
        let bytes = Data("ours".utf8)
        #expect(medium.createExclusively(SharedProposals.name(.list, version: 1, bytes: bytes), contents: Data()))
        #expect(throws: PublisherError(.proposal, "")) { try shared.finish(1, list: bytes) }
        // The same bytes already there are no error (a retry).
        let again = Data("again".utf8)
        try shared.finish(1, list: again)
        #expect(try shared.finish(1, list: again) == SharedProposals.name(.list, version: 1, bytes: again))
    }

    @Test func twoProposalsOfTheSameBodyHaveDifferentNames() {
        let first = Proposal(version: 1, proposer: "a", body: Data("body".utf8), approvals: [])
        let second = Proposal(version: 1, proposer: "a", body: Data("body".utf8), approvals: [])
        #expect(first.nonce != second.nonce)
    }
}
