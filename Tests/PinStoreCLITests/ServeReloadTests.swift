import Foundation
import PinStore
import PinStoreSigning
import PinStoreTestSupport
import Testing

/// `pinstore serve` reloads a changed list file only when apps would take it: verified with the
/// key set and threshold they configure, and not older than the list served before (issue 32,
/// finding 4).
extension CommandLineTests {
    static let entry = FingerprintEntry(name: "renewed.pinstore.test", fingerprint: Data(repeating: 7, count: 32), expires: 4_102_444_799)

    /// A list of ``entry`` with a whole-list signature (which a version needs) by `signer`.
    static func list(_ signer: FingerprintListSigner, version: Int64?) throws -> Data {
        try signer.staticList([entry], timestamp: 1_780_000_000, version: version)
    }

    static func signingKey(_ name: String) throws -> P256PrivateKey {
        try P256PrivateKey(pem: TestResources.fixtureText("keys/\(name).key.pem"))
    }

    /// Replaces the served file at `path` with `body` and asks for the list once.
    static func republish(_ body: Data, at path: String, url: String) async throws -> HTTPTestClient.Response {
        try body.write(to: URL(fileURLWithPath: path), options: .atomic)
        return try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
    }

    @Test func serveKeepsThePreviousListWhenTheVersionGoesDown() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let five = try Self.list(signer, version: 5)
        let path = try Self.listCopy("lists/static-good.json")
        try five.write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try Self.startServe(["--list", path])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let response = try await Self.republish(try Self.list(signer, version: 4), at: path, url: url)
        _ = try await serve.stop()
        #expect(response.body == five)
        #expect(serve.stderr.contains("version 4 is lower than the 5"), "\(serve.stderr)")
    }

    @Test func serveKeepsThePreviousListWhenTheVersionDisappears() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let five = try Self.list(signer, version: 5)
        let path = try Self.listCopy("lists/static-good.json")
        try five.write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try Self.startServe(["--list", path])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let response = try await Self.republish(try Self.list(signer, version: nil), at: path, url: url)
        _ = try await serve.stop()
        #expect(response.body == five)
        #expect(serve.stderr.contains("has no signed version"), "\(serve.stderr)")
    }

    @Test func serveChecksAReloadedListWithTheConfiguredKeySetAndThreshold() async throws {
        let both = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"), additionalKeys: [try Self.signingKey("other-signing")])
        let first = try Self.list(both, version: 1)
        let path = try Self.listCopy("lists/static-good.json")
        try first.write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try Self.startServe(["--list", path, "--threshold", "2",
                                         "--public-key", TestResources.fixturePath("keys/list-signing.pub.b64"),
                                         "--public-key", TestResources.fixturePath("keys/other-signing.pub.b64")])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        // Version 2 signed by one key of the two: a store with threshold 2 refuses it.
        let one = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let response = try await Self.republish(try Self.list(one, version: 2), at: path, url: url)
        _ = try await serve.stop()
        #expect(response.body == first)
        #expect(serve.stderr.contains("does not verify with 2 of the 2 --public-key keys"), "\(serve.stderr)")
    }

    @Test func serveServesAHigherVersion() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let path = try Self.listCopy("lists/static-good.json")
        try Self.list(signer, version: 5).write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try Self.startServe(["--list", path])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let six = try Self.list(signer, version: 6)
        let response = try await Self.republish(six, at: path, url: url)
        _ = try await serve.stop()
        #expect(response.body == six)
    }
}
