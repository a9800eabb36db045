import Foundation
import PinStore
import PinStoreSigning
import PinStoreTestSupport
import Testing

/// `pinstore serve` sends validators and answers conditional requests, consistently across
/// reloads of its list file (issue 44, item 3).
extension CommandLineTests {
    /// A running `pinstore serve` on a copy of a list file holding `first`, and the URL of its list.
    static func serveCopy(of first: Data, _ arguments: [String] = []) async throws -> (serve: RunningProcess, path: String, url: URL) {
        let path = try listCopy("lists/static-good.json")
        try first.write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try startServe(["--list", path] + arguments)
        let base = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        return (serve, path, try #require(URL(string: base + "/list.json")))
    }

    /// An IMF-fixdate header as a date, read by Foundation's formatter (not the server's parser).
    static func httpDate(_ header: String?) throws -> Date {
        let header = try #require(header)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return try #require(formatter.date(from: header), "not an IMF-fixdate: \(header)")
    }

    /// Waits until the wall clock is past the second `lastModified` names, so bytes the server
    /// first serves from now on would get a later date. Not a bound on anything: it only makes
    /// a date that did not move mean something.
    static func waitForTheNextSecond(after lastModified: String?) async throws {
        let date = try httpDate(lastModified)
        while Date() < date.addingTimeInterval(1) {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
    }

    @Test func serveAnswers304ToTheETagOfTheListItServes() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let (serve, _, url) = try await Self.serveCopy(of: try Self.list(signer, version: 1))
        let first = try await HTTPTestClient.get(url)
        let again = try await HTTPTestClient.get(url, headers: ["If-None-Match": try #require(first.header("ETag"))])
        _ = try await serve.stop()
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(serve.stdout.contains("GET /list.json -> 304"))
    }

    @Test func serveReloadOfIdenticalBytesKeepsETagAndLastModified() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let list = try Self.list(signer, version: 1)
        let (serve, path, url) = try await Self.serveCopy(of: list)
        let before = try await HTTPTestClient.get(url)
        try await Self.waitForTheNextSecond(after: before.header("Last-Modified"))
        try list.write(to: URL(fileURLWithPath: path), options: .atomic)   // a new file (inode) with the same bytes
        let after = try await HTTPTestClient.get(url)
        _ = try await serve.stop()
        #expect(serve.stdout.contains("reloaded"), "the server did not reload: \(serve.stdout)")
        #expect(after.header("ETag") == before.header("ETag"))
        #expect(after.header("Last-Modified") == before.header("Last-Modified"))
    }

    @Test func serveReloadOfNewBytesChangesETagAndMovesLastModifiedForward() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let (serve, path, url) = try await Self.serveCopy(of: try Self.list(signer, version: 1))
        let before = try await HTTPTestClient.get(url)
        try await Self.waitForTheNextSecond(after: before.header("Last-Modified"))
        try Self.list(signer, version: 2).write(to: URL(fileURLWithPath: path), options: .atomic)
        let after = try await HTTPTestClient.get(url)
        _ = try await serve.stop()
        #expect(after.header("ETag") != before.header("ETag"))
        #expect(try Self.httpDate(after.header("Last-Modified")) > Self.httpDate(before.header("Last-Modified")))
    }

    @Test func serveAnswersTheETagOfAReplacedListWithTheNewList() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let (serve, path, url) = try await Self.serveCopy(of: try Self.list(signer, version: 1))
        let before = try await HTTPTestClient.get(url)
        let next = try Self.list(signer, version: 2)
        try next.write(to: URL(fileURLWithPath: path), options: .atomic)
        let after = try await HTTPTestClient.get(url, headers: [
            "If-None-Match": try #require(before.header("ETag")),
            "If-Modified-Since": try #require(before.header("Last-Modified")),
        ])
        _ = try await serve.stop()
        #expect(after.status == 200)
        #expect(after.body == next)
    }

    @Test func serveKeepsTheValidatorsOfTheListItKeepsServingAfterARefusedReload() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let (serve, path, url) = try await Self.serveCopy(of: try Self.list(signer, version: 5))
        let before = try await HTTPTestClient.get(url)
        try await Self.waitForTheNextSecond(after: before.header("Last-Modified"))
        try Self.list(signer, version: 4).write(to: URL(fileURLWithPath: path), options: .atomic)   // a rollback: refused
        let after = try await HTTPTestClient.get(url)
        _ = try await serve.stop()
        #expect(serve.stderr.contains("still serving the previous version"), "\(serve.stderr)")
        #expect(after.header("ETag") == before.header("ETag"))
        #expect(after.header("Last-Modified") == before.header("Last-Modified"))
    }

    @Test func serveInChallengeModeIsNeverAnswered304() async throws {
        let serve = try Self.startServe(["--list", TestResources.fixturePath("lists/static-good.json"), "--challenge-mode"])
        let base = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let challenge = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let response = try await HTTPTestClient.get(try #require(URL(string: base + "/list.json")),
                                                    headers: ["X-Cert-Pinning-Challenge": challenge, "If-None-Match": "*"])
        _ = try await serve.stop()
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "no-store")
    }
}
