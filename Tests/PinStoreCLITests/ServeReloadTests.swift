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

    /// Starts `pinstore serve` on a copy of a list file holding `first` (with `arguments`),
    /// replaces the file with `next`, and returns what the server then serves and its stderr.
    static func serveReloading(_ first: Data, then next: Data, _ arguments: [String] = []) async throws -> (served: Data, stderr: String) {
        let path = try listCopy("lists/static-good.json")
        try first.write(to: URL(fileURLWithPath: path), options: .atomic)
        let serve = try startServe(["--list", path] + arguments)
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        try next.write(to: URL(fileURLWithPath: path), options: .atomic)
        let response = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        _ = try await serve.stop()
        return (response.body, serve.stderr)
    }

    @Test func serveKeepsThePreviousListWhenTheVersionGoesDown() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let five = try Self.list(signer, version: 5)
        let reload = try await Self.serveReloading(five, then: try Self.list(signer, version: 4))
        #expect(reload.served == five)
        #expect(reload.stderr.contains("version 4 is lower than the 5"), "\(reload.stderr)")
    }

    @Test func serveKeepsThePreviousListWhenTheVersionDisappears() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let five = try Self.list(signer, version: 5)
        let reload = try await Self.serveReloading(five, then: try Self.list(signer, version: nil))
        #expect(reload.served == five)
        #expect(reload.stderr.contains("has no signed version"), "\(reload.stderr)")
    }

    @Test func serveChecksAReloadedListWithTheConfiguredKeySetAndThreshold() async throws {
        let both = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"), additionalKeys: [try Self.signingKey("other-signing")])
        let first = try Self.list(both, version: 1)
        // Version 2 signed by one key of the two: a store with threshold 2 refuses it.
        let one = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let reload = try await Self.serveReloading(first, then: try Self.list(one, version: 2), [
            "--threshold", "2",
            "--public-key", TestResources.fixturePath("keys/list-signing.pub.b64"),
            "--public-key", TestResources.fixturePath("keys/other-signing.pub.b64"),
        ])
        #expect(reload.served == first)
        #expect(reload.stderr.contains("does not verify with 2 of the 2 --public-key keys"), "\(reload.stderr)")
    }

    @Test func serveServesAHigherVersion() async throws {
        let signer = FingerprintListSigner(privateKey: try Self.signingKey("list-signing"))
        let six = try Self.list(signer, version: 6)
        let reload = try await Self.serveReloading(try Self.list(signer, version: 5), then: six)
        #expect(reload.served == six)
    }
}
