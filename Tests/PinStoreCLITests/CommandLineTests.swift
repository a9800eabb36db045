import Foundation
import PinStoreTestSupport
import Testing
import PinStore
import PinStoreSigning
import PinStoreDevServer
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `pinstore` commands as a user runs them: exit codes, output, error lines.
struct CommandLineTests {
    static let keyPath = TestResources.fixturePath("keys/list-signing.key.pem")
    static let publicKeyB64Path = TestResources.fixturePath("keys/list-signing.pub.b64")

    static func localhostTLS() throws -> ListServerTLS {
        try ListServerTLS(certificateChainFile: TestResources.fixturePath("pki/localhost-chain.pem"),
                          privateKeyFile: TestResources.fixturePath("pki/localhost.key.pem"))
    }

    // MARK: Help and errors

    @Test(arguments: ["keygen", "public-key", "fingerprint", "sign", "keys", "verify", "serve", "demo", "policies", "publish"])
    func helpShowsAnExample(command: String) async throws {
        let result = try await PinstoreBinary.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example"))
        #expect(result.stdout.contains("pinstore \(command)") || result.stdout.contains("swift run pinstore \(command)"))
    }

    /// The argument parser wraps help text at 80 columns; a line break written inside a
    /// paragraph would leave a short line in the middle of it ("each / file, the / leaf").
    @Test(arguments: ["keygen", "public-key", "fingerprint", "sign", "keys", "verify", "serve", "demo", "policies", "reports", "publish"])
    func helpParagraphsHaveNoHardLineBreaks(command: String) async throws {
        let result = try await PinstoreBinary.run([command, "--help"])
        let discussion = result.stdout.components(separatedBy: "\n\n").dropFirst()   // after OVERVIEW
        for paragraph in discussion where !paragraph.hasPrefix("  ") && !paragraph.hasPrefix("USAGE")
            && !paragraph.hasPrefix("OPTIONS") && !paragraph.hasPrefix("ARGUMENTS") && !paragraph.hasPrefix("SUBCOMMANDS") {
            let lines = paragraph.split(separator: "\n", omittingEmptySubsequences: false)
            guard !lines.contains(where: { $0.hasPrefix("  ") }) else { continue }   // examples
            for line in lines.dropLast() {
                #expect(line.count >= 45, "\(command): a short line inside a paragraph: \(line)")
            }
        }
    }

    @Test func failureIsOneLineOnStandardErrorWithoutBacktrace() async throws {
        let result = try await PinstoreBinary.run(["verify", "/nonexistent/list.json", "--public-key", Self.publicKeyB64Path])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.hasPrefix("Error: "))
        #expect(result.stderr.contains("/nonexistent/list.json"))
        #expect(!result.stderr.contains("Backtrac"))
    }

    @Test func unreadableKeyIsReportedInOneLine() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--cert", TestResources.fixturePath("pki/localhost.pem")])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("reading the key"))
    }

    // MARK: keygen

    @Test func keygenKeySignsListsThatVerifyWithThePrintedPublicKey() async throws {
        let directory = try TestResources.temporaryDirectory()
        let key = directory.appendingPathComponent("key.pem").path
        let keygen = try await PinstoreBinary.run(["keygen", "--out", key])
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let lines = keygen.stdout.split(separator: "\n").map(String.init)
        let marker = try #require(lines.firstIndex { $0.hasPrefix("public key (Base64 X9.63") })
        let publicKey = lines[marker + 1]
        #expect(try P256PublicKey(configuredString: publicKey).x963Representation.count == 65)

        let list = directory.appendingPathComponent("list.json").path
        let sign = try await PinstoreBinary.run(["sign", "--key", key, "--cert", TestResources.fixturePath("pki/localhost.pem"), "--out", list])
        try #require(sign.status == 0, "\(sign.stderr)")
        let verify = try await PinstoreBinary.run(["verify", list, "--public-key", publicKey])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test func publicKeyPrintsAgainWhatKeygenPrinted() async throws {
        let directory = try TestResources.temporaryDirectory()
        let key = directory.appendingPathComponent("key.pem").path
        let keygen = try await PinstoreBinary.run(["keygen", "--out", key])
        try #require(keygen.status == 0, "\(keygen.stderr)")
        let lines = keygen.stdout.split(separator: "\n").map(String.init)
        let marker = try #require(lines.firstIndex { $0.hasPrefix("public key (Base64 X9.63") })

        let again = try await PinstoreBinary.run(["public-key", key, "--format", "base64"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == lines[marker + 1] + "\n")
    }

    @Test func publicKeyOfAFileThatIsNoKeyFailsWithOneLine() async throws {
        let directory = try TestResources.temporaryDirectory()
        let notAKey = directory.appendingPathComponent("not-a-key.pem")
        try Data("hello\n".utf8).write(to: notAKey)
        let result = try await PinstoreBinary.run(["public-key", notAKey.path])
        #expect(result.status != 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("reading the key"))
    }

    @Test func keygenWritesTheKeyReadableByItsOwnerOnly() async throws {
        let key = try TestResources.temporaryDirectory().appendingPathComponent("key.pem").path
        _ = try await PinstoreBinary.run(["keygen", "--out", key])
        let permissions = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    #if canImport(Glibc)
    /// A local user watching the folder must never see the key under a wider mode: the file
    /// appears under its own name already 0600 (no temporary file renamed into place, no
    /// `chmod` afterwards, which is the window an inotify watcher races).
    @Test func keygenCreatesTheKeyFileWithMode0600FromItsFirstByte() async throws {
        let directory = try TestResources.temporaryDirectory()
        let key = directory.appendingPathComponent("key.pem").path
        let events = try DirectoryEvents(watching: directory.path)
        let result = try await PinstoreBinary.run(["keygen", "--out", key])
        try #require(result.status == 0, "\(result.stderr)")
        let seen = events.drain()
        #expect(seen.filter(\.isCreate).map(\.name) == ["key.pem"], "files created: \(seen)")
        #expect(!seen.contains { $0.isMovedIn }, "a file was renamed into place: \(seen)")
        #expect(!seen.contains { $0.isAttributeChange }, "the mode was changed after creation: \(seen)")
        #expect(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int == 0o600)
    }
    #endif

    @Test func keygenRefusesAPathThatIsADanglingSymlink() async throws {
        let directory = try TestResources.temporaryDirectory()
        let target = directory.appendingPathComponent("planted-target.pem")
        let key = directory.appendingPathComponent("key.pem").path
        try FileManager.default.createSymbolicLink(atPath: key, withDestinationPath: target.path)
        let result = try await PinstoreBinary.run(["keygen", "--out", key])
        #expect(result.status == 1)
        #expect(!FileManager.default.fileExists(atPath: target.path))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: key) == target.path)
    }

    @Test func keygenWithForceReplacesAnExistingKeyWithMode0600() async throws {
        let key = try TestResources.temporaryDirectory().appendingPathComponent("key.pem").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: key))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        let result = try await PinstoreBinary.run(["keygen", "--out", key, "--force"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: key, encoding: .utf8).contains("BEGIN PRIVATE KEY"))
        #expect(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int == 0o600)
    }

    @Test func keygenWithPassphraseEncryptsTheKey() async throws {
        let directory = try TestResources.temporaryDirectory()
        let key = directory.appendingPathComponent("key.pem").path
        let passphrase = directory.appendingPathComponent("pass.txt")
        try Data("correct horse\n".utf8).write(to: passphrase)
        let keygen = try await PinstoreBinary.run(["keygen", "--out", key, "--passphrase-file", passphrase.path])
        try #require(keygen.status == 0, "\(keygen.stderr)")
        #expect(try String(contentsOfFile: key, encoding: .utf8).contains("BEGIN ENCRYPTED PRIVATE KEY"))
        let certificate = TestResources.fixturePath("pki/localhost.pem")
        let withoutPassphrase = try await PinstoreBinary.run(["sign", "--key", key, "--cert", certificate])
        #expect(withoutPassphrase.status == 1)
        let withPassphrase = try await PinstoreBinary.run(["sign", "--key", key, "--passphrase-file", passphrase.path, "--cert", certificate])
        #expect(withPassphrase.status == 0, "\(withPassphrase.stderr)")
    }

    @Test func keygenRefusesToOverwriteAnExistingKey() async throws {
        let key = try TestResources.temporaryDirectory().appendingPathComponent("key.pem").path
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: key))
        let result = try await PinstoreBinary.run(["keygen", "--out", key])
        #expect(result.status == 1)
        #expect(try String(contentsOfFile: key, encoding: .utf8) == "keep me")
    }

    // MARK: fingerprint

    @Test func fingerprintOfADERFileMatchesTheLibrary() async throws {
        let result = try await PinstoreBinary.run(["fingerprint", TestResources.fixturePath("pki/localhost.der")])
        let certificate = try TestResources.certificate("pki/localhost.pem")
        #expect(result.status == 0)
        #expect(result.stdout.contains("fingerprint:         \(certificate.fingerprintBase64)"))
        #expect(result.stdout.contains(certificate.fingerprintHex))
        #expect(result.stdout.contains("SPKI-SHA256-BASE64:  \(certificate.spkiSHA256Base64)"))
    }

    @Test func fingerprintOfABundleListsEveryCertificate() async throws {
        let result = try await PinstoreBinary.run(["fingerprint", TestResources.fixturePath("pki/bundle-with-junk.pem")])
        #expect(result.status == 0)
        #expect(result.stdout.contains("certificate 3 of 3"))
    }

    @Test func fingerprintOfAHostShowsThePresentedChainAsUnverified() async throws {
        let server = try await ListServer.start(tls: Self.localhostTLS(), responder: ListResponders.staticList(Data()))
        let result = try await PinstoreBinary.run(["fingerprint", "127.0.0.1:\(server.port)"])
        try await server.shutdown()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("NOT verified"))
        #expect(result.stdout.contains(try TestResources.certificate("pki/localhost.pem").fingerprintBase64))
        #expect(result.stdout.contains(try TestResources.certificate("pki/intermediate-ca.pem").fingerprintBase64))
    }

    @Test func fingerprintOfAClosedPortFailsWithOneLine() async throws {
        // A port held closed for the test's length (a freed server port could be taken meanwhile).
        let closed = try ClosedLoopbackPort()
        let result = try await PinstoreBinary.run(["fingerprint", "127.0.0.1:\(closed.port)", "--timeout", "3"])
        withExtendedLifetime(closed) {}
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("cannot connect"))
    }

    // MARK: sign

    /// Runs `pinstore sign --host` against a loopback TLS server presenting `tls`.
    static func signFromHost(_ tls: ListServerTLS, host: String = "127.0.0.1", _ extra: [String]) async throws -> ProcessOutput {
        let server = try await ListServer.start(tls: tls, responder: ListResponders.staticList(Data()))
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--host", "\(host):\(server.port)"] + extra)
        try await server.shutdown()
        return result
    }

    static func signedEntries(_ result: ProcessOutput) throws -> [FingerprintEntry] {
        try FingerprintList.verifiedEntries(staticList: Data(result.stdout.utf8), publicKey: P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64")))
    }

    @Test func signFromAHostPinsTheVerifiedLeafUnderTheHostName() async throws {
        let result = try await Self.signFromHost(Self.localhostTLS(), host: "localhost", ["--ca-file", TestResources.fixturePath("pki/root-ca.pem")])
        try #require(result.status == 0, "\(result.stderr)")
        let entries = try Self.signedEntries(result)
        #expect(entries.map(\.name) == ["localhost"])
        #expect(entries.map(\.fingerprint) == [try TestResources.certificate("pki/localhost.pem").fingerprint])
    }

    @Test func signFromAHostRefusesAChainTheSystemStoreDoesNotTrust() async throws {
        let result = try await Self.signFromHost(Self.localhostTLS(), [])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("does not verify"))
    }

    @Test func signFromAHostRefusesACertificateForAnotherHostName() async throws {
        // wildcard.pem is valid for *.pinstore.test only, not for the host asked.
        let directory = try TestResources.temporaryDirectory()
        let chain = directory.appendingPathComponent("chain.pem")
        try (TestResources.fixture("pki/wildcard.pem") + TestResources.fixture("pki/intermediate-ca.pem")).write(to: chain)
        let tls = try ListServerTLS(certificateChainFile: chain.path, privateKeyFile: TestResources.fixturePath("pki/wildcard.key.pem"))
        let result = try await Self.signFromHost(tls, host: "localhost", ["--ca-file", TestResources.fixturePath("pki/root-ca.pem")])
        #expect(result.status == 1)
        #expect(!result.stdout.contains("pinstore.test"))
    }

    @Test func signFromAHostNamesTheEntryAfterNameWhenGiven() async throws {
        let result = try await Self.signFromHost(Self.localhostTLS(), ["--ca-file", TestResources.fixturePath("pki/root-ca.pem"), "--name", "api.pinstore.test"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(try Self.signedEntries(result).map(\.name) == ["api.pinstore.test"])
    }

    @Test func signFromAHostWithInsecurePinsAnUnverifiedChainWithAWarning() async throws {
        let result = try await Self.signFromHost(Self.localhostTLS(), ["--insecure"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning"))
        #expect(try Self.signedEntries(result).map(\.name) == ["127.0.0.1"])
    }

    @Test func signExpiresOptionOverridesNotAfter() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                   "--expires", "2030-01-01T00:00:00Z"])
        try #require(result.status == 0, "\(result.stderr)")
        let list = try ListReadBack.parse(Data(result.stdout.utf8))
        #expect(list.entries.map(\.entry.expires) == [1_893_456_000])
    }

    @Test func signEntryAcceptsHexFingerprints() async throws {
        let certificate = try TestResources.certificate("pki/localhost.pem")
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--entry", "localhost,\(certificate.fingerprintHex),4102444799"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(try ListReadBack.parse(Data(result.stdout.utf8)).entries.map(\.entry.fingerprint) == [certificate.fingerprint])
    }

    @Test func signRefusesAShortFingerprint() async throws {
        let result = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--entry", "localhost,AAAA,4102444799"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--entry"))
    }

    // MARK: verify

    /// The fixtures' pins expire at 2099-12-31T23:59:59Z.
    @Test func verifyWarnDaysFailsWithStatusTwoWhenAPinExpiresWithinTheWindow() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-good.json"),
                                                   "--public-key", Self.publicKeyB64Path, "--now", "2099-12-01T00:00:00Z", "--warn-days", "60"])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("expires in 31.0 days"))
        #expect(result.stderr.contains("within 60 days"))
    }

    @Test func verifyWarnDaysPassesWhenNothingExpiresWithinTheWindow() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-good.json"),
                                                   "--public-key", Self.publicKeyB64Path, "--now", "2099-12-01T00:00:00Z", "--warn-days", "30"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("nothing expires within 30 days"))
    }

    @Test func verifyMarksTheTamperedEntryAndFails() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-tampered-fingerprint.json"),
                                                   "--public-key", Self.publicKeyB64Path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("valid          api.pinstore.test"))
        #expect(result.stdout.contains("bad signature  localhost"))
    }

    @Test func signWritesAWholeListSignatureThatVerifyChecks() async throws {
        let list = try TestResources.temporaryDirectory().appendingPathComponent("list.json").path
        let sign = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                 "--timestamp", "1800000000", "--out", list])
        try #require(sign.status == 0, "\(sign.stderr)")
        let verify = try await PinstoreBinary.run(["verify", list, "--public-key", Self.publicKeyB64Path])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("whole-list signature: valid, timestamp 2027-01-15T08:00:00Z (1800000000)"))
    }

    @Test func verifyFailsAListWhoseWholeListSignatureDoesNotMatch() async throws {
        let directory = try TestResources.temporaryDirectory()
        let list = directory.appendingPathComponent("list.json")
        let sign = try await PinstoreBinary.run(["sign", "--key", Self.keyPath, "--cert", TestResources.fixturePath("pki/localhost.pem"),
                                                 "--timestamp", "1800000000", "--out", list.path])
        try #require(sign.status == 0, "\(sign.stderr)")
        // A later timestamp, under the old signature: what a replay-hiding edit would do.
        let edited = try String(contentsOf: list, encoding: .utf8).replacingOccurrences(of: "1800000000", with: "1900000000")
        try Data(edited.utf8).write(to: list)
        let verify = try await PinstoreBinary.run(["verify", list.path, "--public-key", Self.publicKeyB64Path])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("whole-list signature: INVALID"))
    }

    @Test func verifyPassesTheGoodFixtureList() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-good.json"),
                                                   "--public-key", TestResources.fixturePath("keys/list-signing.pub.pem")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    @Test func verifyFailsAListSignedWithAnotherKey() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-wrong-key.json"),
                                                   "--public-key", Self.publicKeyB64Path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("bad signature"))
    }

    @Test func verifyFailsAnEmptyList() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/static-empty.json"),
                                                   "--public-key", Self.publicKeyB64Path])
        #expect(result.status == 1)
    }

    @Test func verifyAcceptsTheChallengeFixture() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/challenge-good.json"),
                                                   "--public-key", Self.publicKeyB64Path,
                                                   "--challenge", TestResources.fixtureText("lists/challenge.txt"),
                                                   "--signature", TestResources.fixtureText("lists/challenge-good.sig")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    @Test func verifyRefusesAChallengeSignatureOverAnotherChallenge() async throws {
        let result = try await PinstoreBinary.run(["verify", TestResources.fixturePath("lists/challenge-good.json"),
                                                   "--public-key", Self.publicKeyB64Path,
                                                   "--challenge", TestResources.fixtureText("lists/challenge.txt"),
                                                   "--signature", TestResources.fixtureText("lists/challenge-other-challenge.sig")])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    // MARK: serve

    static func startServe(_ extra: [String]) throws -> RunningProcess {
        let binary = try #require(PinstoreBinary.path, "pinstore was not built")
        return try RunningProcess(binary, ["serve", "--key", keyPath, "--port", "0"] + extra)
    }

    @Test func serveAnswersWithTheSignedListAndStopsOnSIGINT() async throws {
        let list = TestResources.fixturePath("lists/static-good.json")
        let serve = try Self.startServe(["--list", list])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let response = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        let status = try await serve.stop(with: SIGINT)
        #expect(response.status == 200)
        #expect(response.body == (try TestResources.fixture("lists/static-good.json")))
        #expect(status == 0)
    }

    @Test func serveStopsOnSIGTERM() async throws {
        let serve = try Self.startServe(["--list", TestResources.fixturePath("lists/static-good.json")])
        _ = try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#)
        #expect(try await serve.stop(with: SIGTERM) == 0)
    }

    @Test func serveInChallengeModeSignsEachRequestsChallenge() async throws {
        let serve = try Self.startServe(["--list", TestResources.fixturePath("lists/static-good.json"), "--challenge-mode"])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let challenge = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let response = try await HTTPTestClient.get(try #require(URL(string: url)), headers: ["X-Cert-Pinning-Challenge": challenge])
        _ = try await serve.stop()
        let key = try P256PublicKey(configuredString: TestResources.fixtureText("keys/list-signing.pub.b64"))
        let list = try ListReadBack.verifyChallengeResponse(response.body, challenge: challenge,
                                                                     signatureHeader: response.header("X-Cert-Pinning-Signature"), publicKey: key)
        #expect(list.entries.count == 4)
        #expect(list.timestamp != nil)
    }

    /// A copy of a fixture list in a fresh folder, for tests that change it while it is served.
    static func listCopy(_ fixture: String) throws -> String {
        let path = try TestResources.temporaryDirectory().appendingPathComponent("list.json").path
        try TestResources.fixture(fixture).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func serveServesAReSignedListWithoutARestart() async throws {
        let path = try Self.listCopy("lists/static-good.json")
        let serve = try Self.startServe(["--list", path])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let before = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem")))
        let next = try signer.staticList([FingerprintEntry(name: "renewed.pinstore.test", fingerprint: Data(repeating: 7, count: 32), expires: 4_102_444_799)])
        try next.write(to: URL(fileURLWithPath: path), options: .atomic)
        let after = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        _ = try await serve.stop()
        #expect(before.body == (try TestResources.fixture("lists/static-good.json")))
        #expect(after.body == next)
        #expect(serve.stdout.contains("reloaded"))
    }

    @Test func serveKeepsThePreviousListWhenTheChangedFileDoesNotVerify() async throws {
        let path = try Self.listCopy("lists/static-good.json")
        let serve = try Self.startServe(["--list", path])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        try TestResources.fixture("lists/static-wrong-key.json").write(to: URL(fileURLWithPath: path), options: .atomic)
        let response = try await HTTPTestClient.get(try #require(URL(string: url + "/list.json")))
        _ = try await serve.stop()
        #expect(response.status == 200)
        #expect(response.body == (try TestResources.fixture("lists/static-good.json")))
        #expect(serve.stderr.contains("still serving the previous version"))
    }

    @Test func serveAnswers404OutsideTheListsPaths() async throws {
        let serve = try Self.startServe(["--list", TestResources.fixturePath("lists/static-good.json")])
        let url = try #require(try await serve.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+"#), "no URL: \(serve.stderr)")
        let other = try await HTTPTestClient.get(try #require(URL(string: url + "/pins/lst.json")))
        let named = try await HTTPTestClient.get(try #require(URL(string: url + "/static-good.json")))
        let root = try await HTTPTestClient.get(try #require(URL(string: url + "/")))
        _ = try await serve.stop()
        #expect(other.status == 404)
        #expect(named.status == 200)
        #expect(root.status == 200)
    }

    @Test func serveRefusesAListThatDoesNotVerifyWithItsKey() async throws {
        let result = try await PinstoreBinary.run(["serve", "--key", Self.keyPath, "--port", "0",
                                                   "--list", TestResources.fixturePath("lists/static-wrong-key.json")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("does not verify"))
    }
}
