import Foundation
@testable import PinStore
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// The storage folder's CRL files are deleted once no process can use them, and only then:
/// real files in a private temporary folder, CRLs signed by the test kit's CA through OpenSSL,
/// and the sweep's time given (``CRLChecker/sweep(now:)``) or read from an injected clock
/// (through ``PinStore/run()``).
@Suite struct CRLStorageSweepTests {
    /// 2030-01-01T00:00:00Z, the time every sweep here runs at.
    static let now: Int64 = 1_893_456_000
    static let day: TimeInterval = 86_400

    /// Whether `file` is there (a symbolic link counts, whatever it points to).
    static func exists(_ file: URL) -> Bool {
        FileStatus(path: file.path, followingSymlinks: false) != nil
    }

    struct Folder {
        let url: URL
        let checker: CRLChecker
        let pki: TestPKI

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-sweep-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            checker = CRLChecker(defaultMode: .enforceSoftFail, directory: url)
            pki = try TestPKI(hosts: ["localhost"])
        }

        /// A CRL of the test CA whose `nextUpdate` is `offset` seconds from ``now``.
        func crl(nextUpdateIn offset: TimeInterval) throws -> Data {
            let next = Date(timeIntervalSince1970: TimeInterval(CRLStorageSweepTests.now) + offset)
            return try pki.crl(by: .intermediate, thisUpdate: next.addingTimeInterval(-7 * CRLStorageSweepTests.day), nextUpdate: next)
        }

        /// Writes `der` where the checker keeps the CRL of `url` (0600, as the checker does).
        @discardableResult
        func store(_ der: Data, for url: String) throws -> URL {
            let file = try #require(checker.fileURL(for: url))
            try PersistentListFile.writeAtomically(der, to: file)
            return file
        }


        func remove() { try? FileManager.default.removeItem(at: url) }
    }

    @Test func aStoredCRLExpiredLongerThanTheGraceIsDeleted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let file = try folder.store(try folder.crl(nextUpdateIn: -3 * Self.day), for: "http://127.0.0.1:1/old.crl")
        #expect(folder.checker.sweep(now: Self.now) == [file.lastPathComponent])
        #expect(!Self.exists(file))
    }

    @Test func aStoredCRLStillCurrentStaysForTheWorkersSharingTheFolder() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let file = try folder.store(try folder.crl(nextUpdateIn: Self.day), for: "http://127.0.0.1:1/current.crl")
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        #expect(Self.exists(file))
    }

    @Test func aStoredCRLExpiredWithinTheGraceStays() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let file = try folder.store(try folder.crl(nextUpdateIn: -3_600), for: "http://127.0.0.1:1/recent.crl")
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        #expect(Self.exists(file))
    }

    @Test func aSymbolicLinkNamedLikeAStoredCRLIsNeitherFollowedNorDeleted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-sweep-target-\(UUID().uuidString).der")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try folder.crl(nextUpdateIn: -30 * Self.day).write(to: elsewhere)
        let link = try #require(folder.checker.fileURL(for: "http://127.0.0.1:1/linked.crl"))
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: elsewhere)
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        #expect(Self.exists(link))
        #expect(Self.exists(elsewhere))
    }

    @Test func filesOfOtherNamesAreNeverTouched() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let expired = try folder.crl(nextUpdateIn: -30 * Self.day)
        let others = ["pinstore-store.json", "pinstore-crl-old.der", "pinstore-crl-\(String(repeating: "A", count: 64)).der", "my.crl"]
        for name in others {
            try expired.write(to: folder.url.appendingPathComponent(name))
        }
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        for name in others {
            #expect(Self.exists(folder.url.appendingPathComponent(name)), "\(name)")
        }
    }

    @Test func aStoredFileThatIsNotACRLIsLeft() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let file = try folder.store(Data("not a CRL".utf8), for: "http://127.0.0.1:1/junk.crl")
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        #expect(Self.exists(file))
    }

    /// A refresh by run() is not a use: a CRL no check has read for a week is forgotten, so
    /// nothing keeps its file current any more.
    @Test func aCRLNoCheckReadForAWeekIsForgottenEvenIfRefreshed() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let url = "http://127.0.0.1:1/idle.crl"
        let issuer = folder.pki.intermediate
        let issuerKey = try #require(Digest32(SHA256Digest.hash(issuer.subjectPublicKeyInfo)))
        let cached = Self.now - 8 * Int64(Self.day)
        try folder.checker.install(url: url, der: try folder.pki.crl(by: .intermediate, thisUpdate: Date(timeIntervalSince1970: TimeInterval(cached - 60)),
                                                                     nextUpdate: Date(timeIntervalSince1970: TimeInterval(Self.now) + Self.day)),
                                   issuer: issuer.derRepresentation, issuerKey: issuerKey, now: cached)
        folder.checker.sweep(now: Self.now - 2 * Int64(Self.day))
        #expect(folder.checker.entry(for: url) != nil)
        // Refreshed the day before the sweep (what run() does), but never read by a check.
        try folder.checker.install(url: url, der: try folder.crl(nextUpdateIn: Self.day), issuer: issuer.derRepresentation,
                                   issuerKey: issuerKey, now: Self.now - Int64(Self.day))
        folder.checker.sweep(now: Self.now)
        #expect(folder.checker.entry(for: url) == nil)
    }

    @Test func aCRLTheStoreStillHoldsIsNotDeleted() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let url = "http://127.0.0.1:1/held.crl"
        let issuer = folder.pki.intermediate
        let der = try folder.crl(nextUpdateIn: -3 * Self.day)
        try folder.checker.install(url: url, der: der, issuer: issuer.derRepresentation,
                                   issuerKey: try #require(Digest32(SHA256Digest.hash(issuer.subjectPublicKeyInfo))), now: Self.now - 5 * Int64(Self.day))
        let file = try folder.store(der, for: url)
        #expect(folder.checker.sweep(now: Self.now).isEmpty)
        #expect(Self.exists(file))
    }

    /// Through run(): the store's clock says when it is, and the first pass sweeps.
    @Test(.timeLimit(.minutes(10)))
    func runDeletesALongExpiredStoredCRLOnItsClock() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let clock = ManualClock.inValidPeriod()
        #expect(Int64(clock.now().timeIntervalSince1970) == Self.now)
        let old = try folder.store(try folder.crl(nextUpdateIn: -3 * Self.day), for: "http://127.0.0.1:1/old.crl")
        let current = try folder.store(try folder.crl(nextUpdateIn: Self.day), for: "http://127.0.0.1:1/current.crl")
        var configuration = PinStore.Configuration(serviceURL: URL(string: "http://127.0.0.1:1/list.json")!, publicKey: try TestListSigningKey().publicKeyBase64,
                                                   storageDirectory: folder.url)
        configuration.crlMode = .enforceSoftFail
        let store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
        let service = Task { try await store.run() }
        defer { service.cancel() }
        _ = try await pollUntil(every: .milliseconds(20)) { !Self.exists(old) }
        #expect(!Self.exists(old))
        #expect(Self.exists(current))
    }
}
