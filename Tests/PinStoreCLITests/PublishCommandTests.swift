import Foundation
import PinStore
import PinStoreSigning
import PinStoreTestSupport
import PinStoreTesting
import Testing

/// `pinstore publish`: the built tool against a TLS server on 127.0.0.1 (reached through
/// `--connect-to`, so the certificate is checked for the partner's name), real files, real exit codes.
@Suite(.timeLimit(.minutes(15))) struct PublishCommandTests {
    static let host = "partner.pinstore.test"

    struct Folder {
        let url: URL
        let key: P256PrivateKey
        var file: String { url.appendingPathComponent("publication.json").path }
        var list: URL { url.appendingPathComponent("public/list.json") }
        func keyPath() -> String { url.appendingPathComponent("signing.key.pem").path }
    }

    /// A publication folder for one partner: K = 1 and T = 0, so one `once` round publishes.
    /// `extra` (`, "key": value`) is added to the file's top level.
    static func folder(_ pki: TestPKI, anchors: [X509Certificate]? = nil, extra: String = "") throws -> Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-publish-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let key = try P256PrivateKey()
        try key.pkcs8PEM().write(to: url.appendingPathComponent("signing.key.pem"), atomically: true, encoding: .utf8)
        try (anchors ?? [pki.root]).map(pem).joined().write(to: url.appendingPathComponent("anchors.pem"), atomically: true, encoding: .utf8)
        try pem(pki.intermediate).write(to: url.appendingPathComponent("intermediate.pem"), atomically: true, encoding: .utf8)
        let json = """
            {"partners": [{"id": "partner", "host": "\(host)", "anchors": "anchors.pem", "allowedCAs": ["intermediate.pem"]}],
             "signingKeys": [{"file": "signing.key.pem"}],
             "minimumSightings": 1, "minimumSpan": 0, "probeInterval": "1m",
             "outputFolder": "public", "stateFolder": "state"\(extra)}
            """
        try Data(json.utf8).write(to: url.appendingPathComponent("publication.json"))
        return Folder(url: url, key: key)
    }

    static func pem(_ certificate: X509Certificate) -> String {
        "-----BEGIN CERTIFICATE-----\n" + certificate.derRepresentation.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END CERTIFICATE-----\n"
    }

    static func publish(_ arguments: [String], _ folder: Folder, port: Int? = nil) async throws -> ProcessOutput {
        let route = port.map { ["--connect-to", "\(host):443:127.0.0.1:\($0)"] } ?? []
        return try await PinstoreBinary.run(["publish"] + arguments + ["--file", folder.file, "--log-level", "warning"] + route)
    }

    /// `pinstore verify` of the published list with the publisher's public key: what apps accept.
    static func verify(_ folder: Folder) async throws -> ProcessOutput {
        let key = try folder.key.publicKey.x963Representation.base64EncodedString()
        return try await PinstoreBinary.run(["verify", folder.list.path, "--public-key", key])
    }

    @Test func statusBeforeAnyListExitsFour() async throws {
        let folder = try Self.folder(try TestPKI(hosts: [Self.host]))
        let result = try await Self.publish(["status"], folder)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stdout.contains("no list published yet"))
    }

    @Test func onceProbesAndPublishesAListAClientAccepts() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let folder = try Self.folder(pki)
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            let result = try await Self.publish(["once"], folder, port: server.port)
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            #expect(result.stdout.contains("partner"))
        }
        let verified = try await Self.verify(folder)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains(pki.leaf.certificate.fingerprintBase64))
        let status = try await Self.publish(["status"], folder)
        #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
        #expect(status.stdout.contains("list version"))
    }

    @Test func announcePublishesAPinForAnUndeployedKey() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        let folder = try Self.folder(pki)
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            _ = try await Self.publish(["once"], folder, port: server.port)
        }
        let keyFile = folder.url.appendingPathComponent("next.key.pem")
        try next.privateKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
        let result = try await Self.publish(["announce", "--host", Self.host, "--key", keyFile.path], folder)
        #expect(result.status == 0, "\(result.stderr)")
        let pin = next.certificate.spkiSHA256Base64
        #expect(result.stdout.contains(pin))
        let verified = try await Self.verify(folder)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains(pin))
    }

    /// `announce && deploy` must not deploy a key no client pins: with the output folder
    /// read-only (as a full disk leaves it) `announce` exits 5, the announcement stays recorded,
    /// and the next round publishes it.
    @Test func announceExitsFiveWhenNoPublishedListCarriesTheKeyAndKeepsTheAnnouncement() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        let folder = try Self.folder(pki)
        let pin = next.certificate.spkiSHA256Base64
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            let once = try await Self.publish(["once"], folder, port: server.port)
            try #require(once.status == 0, "\(once.stdout)\(once.stderr)")
            let unwritable = try UnwritableFolder(folder.list.deletingLastPathComponent().path)
            let announce: ProcessOutput
            do {
                defer { unwritable.restore() }
                announce = try await Self.publish(["announce", "--host", Self.host, "--spki", pin], folder)
            }
            #expect(announce.status == 5, "\(announce.stdout)\(announce.stderr)")
            #expect(announce.stdout.contains("recorded, but no published list carries it yet"))
            #expect(announce.stderr.contains("do not deploy the key yet"))
            let before = try await Self.verify(folder)
            #expect(!before.stdout.contains(pin))

            let again = try await Self.publish(["once"], folder, port: server.port)
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        }
        let verified = try await Self.verify(folder)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains(pin))
    }

    /// `announce && deploy` with an afterPublish sync that fails: the list in the output folder
    /// carries the key, but it may not have reached clients, so `announce` exits 5 and `once`
    /// exits 1 until the sync succeeds.
    @Test func announceExitsFiveWhileTheAfterPublishCommandFails() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let pin = try pki.issueLeaf(for: [Self.host]).certificate.spkiSHA256Base64
        let broken = try Self.folder(pki, extra: #", "afterPublish": ["/bin/sh", "-c", "echo bucket unreachable >&2; exit 7"]"#)
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            let once = try await Self.publish(["once"], broken, port: server.port)
            #expect(once.status == 1, "\(once.stdout)\(once.stderr)")
            #expect(once.stderr.contains("bucket unreachable"), "\(once.stderr)")
            let announce = try await Self.publish(["announce", "--host", Self.host, "--spki", pin], broken)
            #expect(announce.status == 5, "\(announce.stdout)\(announce.stderr)")
            #expect(announce.stderr.contains("after-publish command failed"), "\(announce.stderr)")
        }
    }

    /// Exit 4 means the list is not re-signed in time, not that it expires within a day: a
    /// 12-hour list re-signed every hour is fine; a list that should have 29 days left (the file
    /// now asks for 30-day lists) but has 12 hours is overdue until `once` re-signs it.
    @Test func statusExitsFourOnlyWhenTheListIsNotReSignedInTime() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let folder = try Self.folder(pki, extra: #", "expires": "12h", "resignInterval": "1h""#)
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            let once = try await Self.publish(["once"], folder, port: server.port)
            #expect(once.status == 0, "\(once.stdout)\(once.stderr)")
            let status = try await Self.publish(["status"], folder)
            #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
            #expect(status.stdout.contains("re-signing due"))

            let file = try String(contentsOfFile: folder.file, encoding: .utf8)
            try file.replacingOccurrences(of: #""expires": "12h", "resignInterval": "1h""#, with: #""expires": "30d", "resignInterval": "1d""#)
                .write(toFile: folder.file, atomically: true, encoding: .utf8)
            let overdue = try await Self.publish(["status"], folder)
            #expect(overdue.status == 4, "\(overdue.stdout)\(overdue.stderr)")
            let resigned = try await Self.publish(["once"], folder, port: server.port)
            #expect(resigned.status == 0, "\(resigned.stdout)\(resigned.stderr)")
        }
    }

    @Test func aRefusedStateFileIsNamedWithoutThePublicationFileInFront() async throws {
        let folder = try Self.folder(try TestPKI(hosts: [Self.host]))
        let state = folder.url.appendingPathComponent("state/state.json")
        try FileManager.default.createDirectory(at: state.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("pinstore-publisher-state 1 sha256=00\n{}".utf8).write(to: state)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: state.path)
        let result = try await Self.publish(["status"], folder)
        #expect(result.status == 1)
        #expect(result.stderr.contains("The state file \(state.path) is writable by group or others"), "\(result.stderr)")
        #expect(result.stderr.contains("chmod 600"), "\(result.stderr)")
        #expect(!result.stderr.contains("\(folder.file):"), "\(result.stderr)")
    }

    @Test func announceRefusesAnUnknownPartner() async throws {
        let folder = try Self.folder(try TestPKI(hosts: [Self.host]))
        let result = try await Self.publish(["announce", "--host", "elsewhere.example", "--spki", Data(count: 32).base64EncodedString()], folder)
        #expect(result.status == 1)
        #expect(result.stderr.contains("elsewhere.example"))
    }

    @Test func aStagedChangeIsListedByPendingAndPublishedByApprove() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        // The partner's anchors trust the other CA too: its leaf validates but comes from a CA the
        // partner's entry does not allow, so it is staged for a person.
        let folder = try Self.folder(pki, anchors: [pki.root, pki.impostorRoot])
        try await TestHTTPSServer.withServer(presenting: pki.impostor) { server in
            let once = try await Self.publish(["once"], folder, port: server.port)
            #expect(once.status == 4, "\(once.stdout)\(once.stderr)")
        }
        let pending = try await Self.publish(["pending"], folder)
        #expect(pending.status == 2, "\(pending.stdout)\(pending.stderr)")
        let row = try #require(pending.stdout.split(separator: "\n").first { $0.contains("partner") && !$0.hasPrefix("ID") })
        let id = String(row.split(separator: " ")[0])
        let approve = try await Self.publish(["approve", id, "--key", folder.keyPath()], folder)
        #expect(approve.status == 0, "\(approve.stdout)\(approve.stderr)")
        let verified = try await Self.verify(folder)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains(pki.impostor.certificate.fingerprintBase64))
    }

    @Test func runPublishesAndStopsOnSIGTERM() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let folder = try Self.folder(pki)
        let binary = try #require(PinstoreBinary.path)
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            let process = try RunningProcess(binary, ["publish", "run", "--file", folder.file, "--log-level", "warning",
                                                      "--connect-to", "\(Self.host):443:127.0.0.1:\(server.port)"])
            // Waits for the event: the list appears (or the command ends, having failed); the
            // suite's time limit is the hang guard.
            while !FileManager.default.fileExists(atPath: folder.list.path), process.child.isRunning {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(FileManager.default.fileExists(atPath: folder.list.path), "\(process.stderr)")
            #expect(try await process.stop(with: SIGTERM) == 0, "\(process.stderr)")
        }
    }
}
