import Foundation
import PinStore
import PinStoreSigning
import PinStoreTestSupport
import Testing

/// `pinstore keys create|next|verify`, `pinstore sign` with several keys and a list version and
/// expiry, and `pinstore verify` with a key set, as an operator runs them.
struct KeysCommandTests {
    /// Four fresh keys written as PEM files, with their public keys as apps configure them.
    struct Keys {
        let directory: URL
        let paths: [String]
        let publicKeys: [String]

        init() throws {
            directory = try TestResources.temporaryDirectory()
            var paths: [String] = []
            var publicKeys: [String] = []
            for name in ["a", "b", "c", "d"] {
                let key = try P256PrivateKey()
                let path = directory.appendingPathComponent("\(name).key.pem").path
                try Data(try key.pkcs8PEM().utf8).write(to: URL(fileURLWithPath: path))
                paths.append(path)
                publicKeys.append(try key.publicKey.x963Representation.base64EncodedString())
            }
            self.paths = paths
            self.publicKeys = publicKeys
        }

        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

        /// `--public-key` for each of `indices`.
        func publicKeyArguments(_ indices: [Int]) -> [String] { indices.flatMap { ["--public-key", publicKeys[$0]] } }
        /// `--sign-with` for each of `indices`.
        func signArguments(_ indices: [Int]) -> [String] { indices.flatMap { ["--sign-with", paths[$0]] } }

        /// keys.json: version 1 (a, b, c, threshold 2) and version 2 (b, c, d, threshold 2).
        func chain() async throws -> String {
            let out = file("keys.json")
            let create = try await PinstoreBinary.run(["keys", "create"] + publicKeyArguments([0, 1, 2])
                + ["--threshold", "2", "--expires", "2099-01-01T00:00:00Z"] + signArguments([0, 1]) + ["--out", out])
            try #require(create.status == 0, "\(create.stderr)")
            let next = try await PinstoreBinary.run(["keys", "next", "--keys", out] + publicKeyArguments([1, 2, 3])
                + ["--threshold", "2", "--expires", "2099-01-01T00:00:00Z"] + signArguments([0, 1, 2, 3]))
            try #require(next.status == 0, "\(next.stderr)")
            return out
        }
    }

    @Test func aChainMadeByKeysCreateAndNextVerifiesFromTheConfiguredKeys() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        let verify = try await PinstoreBinary.run(["keys", "verify", chain] + keys.publicKeyArguments([0, 1, 2]) + ["--threshold", "2"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.contains("version 2: threshold 2 of 3 keys"))
    }

    @Test func keysNextSignedByOneOldKeyIsRefusedAndTheFileIsUnchanged() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        let before = try Data(contentsOf: URL(fileURLWithPath: chain))
        // Version 2 is b, c, d with threshold 2: b alone (and the new set's own key) is not enough.
        let next = try await PinstoreBinary.run(["keys", "next", "--keys", chain] + keys.publicKeyArguments([1])
            + ["--threshold", "1", "--expires", "2099-01-01T00:00:00Z"] + keys.signArguments([1]))
        #expect(next.status != 0)
        #expect(next.stderr.contains("signed by 1 of version 2's keys"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: chain)) == before)
    }

    @Test func keysVerifyRefusesAChainFromOtherConfiguredKeys() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        // A store configured with d alone at version 0: version 1 was signed by a and b only.
        let verify = try await PinstoreBinary.run(["keys", "verify", chain, "--trusted-version", "0"]
            + keys.publicKeyArguments([3]) + ["--threshold", "1"])
        #expect(verify.status != 0)
    }

    @Test func aListSignedByTwoKeysWithVersionAndExpiryVerifiesWithTheKeyDocuments() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        let list = keys.file("list.json")
        let sign = try await PinstoreBinary.run(["sign", "--key", keys.paths[2], "--key", keys.paths[3],
                                                 "--list-version", "3", "--list-expires", "2098-01-01T00:00:00Z",
                                                 "--cert", TestResources.fixturePath("pki/localhost.pem"), "--out", list])
        try #require(sign.status == 0, "\(sign.stderr)")
        let verify = try await PinstoreBinary.run(["verify", list, "--keys", chain, "--now", "2030-01-01T00:00:00Z"])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stdout.contains("version: 3"))
    }

    @Test func aListSignedByOneKeyOfATwoKeySetFailsVerify() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        let list = keys.file("list.json")
        let sign = try await PinstoreBinary.run(["sign", "--key", keys.paths[2], "--list-version", "3",
                                                 "--cert", TestResources.fixturePath("pki/localhost.pem"), "--out", list])
        try #require(sign.status == 0, "\(sign.stderr)")
        let verify = try await PinstoreBinary.run(["verify", list, "--keys", chain, "--now", "2030-01-01T00:00:00Z"])
        #expect(verify.status != 0)
        #expect(verify.stderr.contains("2 distinct keys are needed"))
    }

    @Test func verifyRefusesAListPastItsExpiry() async throws {
        let keys = try Keys()
        let list = keys.file("list.json")
        let sign = try await PinstoreBinary.run(["sign", "--key", keys.paths[0], "--key", keys.paths[1], "--list-expires", "2031-01-01T00:00:00Z",
                                                 "--cert", TestResources.fixturePath("pki/localhost.pem"), "--out", list])
        try #require(sign.status == 0, "\(sign.stderr)")
        let verify = try await PinstoreBinary.run(["verify", list] + keys.publicKeyArguments([0, 1]) + ["--threshold", "2", "--now", "2032-01-01T00:00:00Z"])
        #expect(verify.status != 0)
        #expect(verify.stderr.contains("expired"))
    }

    @Test func serveInChallengeModeWithTwoKeysSatisfiesATwoOfThreeStore() async throws {
        let keys = try Keys()
        let binary = try #require(PinstoreBinary.path, "pinstore was not built")
        let serve = try RunningProcess(binary, ["serve", "--key", keys.paths[0], "--key", keys.paths[1], "--challenge-mode", "--port", "0",
                                                "--list", TestResources.fixturePath("lists/static-good.json")])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        var configuration = PinStore.Configuration(serviceURL: try #require(URL(string: url + "/list.json")), publicKey: keys.publicKeys[0],
                                                   useChallenge: true, storageDirectory: keys.directory.appendingPathComponent("store"))
        configuration.additionalPublicKeys = [keys.publicKeys[1], keys.publicKeys[2]]
        configuration.signatureThreshold = 2
        let store = try PinStore(configuration: configuration)
        let report = await store.updateWithReport(mode: .forced)
        _ = try await serve.stop()
        #expect(report.result == .ok, "\(String(describing: report.error))")
        #expect(store.storedEntries.count == 4)
    }

    @Test func serveRefusesSeveralKeysInStaticMode() async throws {
        let keys = try Keys()
        let result = try await PinstoreBinary.run(["serve", "--key", keys.paths[0], "--key", keys.paths[1], "--port", "0",
                                                   "--list", TestResources.fixturePath("lists/static-good.json")])
        #expect(result.status != 0)
        #expect(result.stderr.contains("Several --key sign challenge-mode responses"))
    }

    @Test func serveServesTheKeyDocumentsBesideTheList() async throws {
        let keys = try Keys()
        let chain = try await keys.chain()
        let binary = try #require(PinstoreBinary.path, "pinstore was not built")
        let serve = try RunningProcess(binary, ["serve", "--key", TestResources.fixturePath("keys/list-signing.key.pem"), "--port", "0",
                                                "--list", TestResources.fixturePath("lists/static-good.json"), "--key-documents", chain])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let served = try await HTTPTestClient.get(try #require(URL(string: url + "/keys.json")))
        let list = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        _ = try await serve.stop()
        #expect(served.status == 200)
        #expect(served.body == (try Data(contentsOf: URL(fileURLWithPath: chain))))
        #expect(list.body == (try TestResources.fixture("lists/static-good.json")))
    }
}
