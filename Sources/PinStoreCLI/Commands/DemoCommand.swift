import ArgumentParser
import Foundation
import PinStore
import PinStoreSigning
import PinStoreDevServer

/// `pinstore demo`: dynamic pinning end to end on loopback, with no network and no setup.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run dynamic pinning end to end on loopback and print what happened.",
        discussion: """
            Makes a fresh list-signing key, takes test certificates from the package's Fixtures/, \
            signs a list pinning the real API server's certificate, serves it on 127.0.0.1, \
            updates a PinStore from it, then makes pinned https requests to two API servers on \
            127.0.0.1 that both present a valid chain for "localhost": the real one (pinned) and \
            an impostor with a mis-issued certificate from the same CA (not pinned). Prints a \
            table of what was fetched, verified, stored, allowed and refused, and exits with \
            status 1 if any step does not behave as it should. Nothing leaves the machine.

            Example:
              swift run pinstore demo
              pinstore demo --fixtures /path/to/PinStore/Fixtures --challenge-mode
            """
    )

    @Option(help: "The Fixtures folder of the PinStore package (default: found from the source tree or the current directory).")
    var fixtures: String?

    @Flag(help: "Serve and fetch the list in challenge mode.")
    var challengeMode = false

    @Option(help: "How the pinned requests go out: url-session (Linux's pinned URLSession, the default there) or nio (PinningTLSVerifier on SwiftNIO, the default on macOS).")
    var transport: DemoTransport = .platformDefault

    func run() async throws {
        let started = Date()
        let folder = try DemoFixtures.locate(fixtures)
        var table = DemoTable()
        var misbehaved = false

        // 1. A fresh signing key and a signed list pinning the real server's leaf.
        let signingKey = try P256PrivateKey()
        let publicKey = try signingKey.publicKey.x963Representation.base64EncodedString()
        let realLeaf = try folder.certificate("pki/localhost.pem")
        let impostorLeaf = try folder.certificate("pki/attacker.pem")
        let pin = FingerprintEntry(name: "localhost", fingerprint: realLeaf.fingerprint,
                                   expires: Int64(realLeaf.notAfter.timeIntervalSince1970))
        let responder: ListServerResponder
        do {
            if challengeMode {
                let body = try FingerprintListSigner.challengeModeBody([pin], timestamp: Int64(Date().timeIntervalSince1970))
                responder = ListResponders.challengeList(body: body, signingKey: signingKey)
            } else {
                responder = ListResponders.staticList(try FingerprintListSigner(privateKey: signingKey).staticList([pin]))
            }
        } catch {
            throw CLIError("signing the demo list", error)
        }

        // 2. The list server and the two API servers, all on 127.0.0.1.
        let listServer = try await start(responder: responder, tls: nil)
        let realServer = try await start(responder: Self.api("hello from the real API"),
                                         tls: folder.tls(chain: "pki/localhost-chain.pem", key: "pki/localhost.key.pem"))
        let impostorServer = try await start(responder: Self.api("hello from the impostor"),
                                             tls: folder.tls(chain: "pki/attacker-chain.pem", key: "pki/attacker.key.pem"))
        let listURL = listServer.baseURL.appendingPathComponent("pins.json")
        table.add("list server", "started", "\(listURL.absoluteString) (\(challengeMode ? "challenge" : "static") mode, key made just now)")

        // 3. A store fed from the list server.
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: storage) }
        let store: PinStore
        do {
            store = try PinStore(configuration: .init(serviceURL: listURL, publicKey: publicKey, useChallenge: challengeMode,
                                                      identifier: "demo", storageDirectory: storage, requestTimeout: 5))
        } catch {
            throw CLIError("creating the store", error)
        }
        let before = store.matchPins(commonName: "localhost", certificateData: realLeaf.derRepresentation)
        table.add("store before update", "\(before)", "nothing pinned yet, so a pinned client refuses every host")
        let report = await store.updateWithReport(mode: .forced)
        if report.result == .ok {
            table.add("fetch + verify + store", "ok", "\(listServer.requestCount) request, signature verified, 1 pin: localhost \(realLeaf.fingerprintBase64.prefix(12))...")
        } else {
            misbehaved = true
            table.add("fetch + verify + store", "\(report.result)", report.error?.reason ?? "update failed")
        }

        // 4. Pinned requests to both servers: same host name, both chains valid.
        let trustRoots = TrustRoots.anchors([try folder.certificate("pki/root-ca.pem")])
        let realURL = try Self.apiURL(realServer)
        let impostorURL = try Self.apiURL(impostorServer)
        switch await DemoPinnedRequest.get(realURL, store: store, trustRoots: trustRoots, transport: transport) {
        case .allowed(let status, let body):
            misbehaved = misbehaved || status != 200
            table.add("real API \(realURL.absoluteString)", "allowed", "HTTP \(status): \(body)")
        case .refused(let reason):
            misbehaved = true
            table.add("real API \(realURL.absoluteString)", "REFUSED", "\(reason) (should have been allowed)")
        }
        let impostorRequestsBefore = impostorServer.requestCount
        switch await DemoPinnedRequest.get(impostorURL, store: store, trustRoots: trustRoots, transport: transport) {
        case .allowed(let status, let body):
            misbehaved = true
            table.add("impostor \(impostorURL.absoluteString)", "ALLOWED", "HTTP \(status): \(body) (should have been refused)")
        case .refused(let reason):
            let leaked = impostorServer.requestCount - impostorRequestsBefore
            misbehaved = misbehaved || leaked != 0
            table.add("impostor \(impostorURL.absoluteString)", "refused", "\(reason); it got \(leaked) request(s); its leaf \(impostorLeaf.fingerprintBase64.prefix(12))... is not in the list")
        }

        for server in [listServer, realServer, impostorServer] {
            try? await server.shutdown()
        }
        Console.print(table.rendered())
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        if misbehaved {
            Console.printError("demo: a step did not behave as it should (see the table); \(seconds) s")
            throw ExitCode.failure
        }
        Console.print("\nPinning works: the pinned host was allowed, the impostor with a valid chain for the same name was refused. (\(seconds) s)")
    }

    private func start(responder: @escaping ListServerResponder, tls: ListServerTLS?) async throws -> ListServer {
        do {
            return try await ListServer.start(tls: tls, responder: responder)
        } catch {
            throw CLIError("starting a demo server: \(error)")
        }
    }

    private static func api(_ message: String) -> ListServerResponder {
        { _ in ListServerResponse(headers: [("Content-Type", "application/json")], body: Data("{\"message\":\"\(message)\"}".utf8)) }
    }

    private static func apiURL(_ server: ListServer) throws -> URL {
        guard let url = URL(string: "https://localhost:\(server.port)/v1/hello") else {
            throw CLIError("cannot form the API URL")
        }
        return url
    }
}

/// The Fixtures folder the demo takes its certificates from.
struct DemoFixtures {
    let root: URL

    static func locate(_ explicit: String?) throws -> DemoFixtures {
        var candidates: [URL] = []
        if let explicit { candidates.append(URL(fileURLWithPath: explicit)) }
        // The source tree this binary was built from (swift run), then the current directory.
        candidates.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures"))
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Fixtures"))
        for candidate in explicit == nil ? candidates : [candidates[0]] {
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("pki/localhost-chain.pem").path) {
                return DemoFixtures(root: candidate)
            }
        }
        throw CLIError("cannot find the PinStore Fixtures folder; run from the package checkout or pass --fixtures PATH")
    }

    func path(_ relative: String) -> String {
        root.appendingPathComponent(relative).path
    }

    func certificate(_ relative: String) throws -> X509Certificate {
        let data = try InputFiles.data(path(relative), what: "fixture")
        do {
            guard let first = try X509Certificate.certificates(fileContents: data).first else {
                throw CLIError("\(relative) holds no certificate")
            }
            return first
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError("reading \(relative)", error)
        }
    }

    func tls(chain: String, key: String) throws -> ListServerTLS {
        do {
            return try ListServerTLS(certificateChainFile: path(chain), privateKeyFile: path(key))
        } catch {
            throw CLIError("\(error)")
        }
    }
}

/// The demo's result table.
struct DemoTable {
    private var rows: [(step: String, result: String, detail: String)] = []

    mutating func add(_ step: String, _ result: String, _ detail: String) {
        rows.append((step, result, detail))
    }

    func rendered() -> String {
        let stepWidth = max(4, rows.map(\.step.count).max() ?? 0)
        let resultWidth = max(6, rows.map(\.result.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(0, width - text.count))
        }
        var lines = ["\(pad("STEP", stepWidth))  \(pad("RESULT", resultWidth))  WHAT AND WHY"]
        lines.append(String(repeating: "-", count: stepWidth + resultWidth + 40))
        for row in rows {
            lines.append("\(pad(row.step, stepWidth))  \(pad(row.result, resultWidth))  \(row.detail)")
        }
        return lines.joined(separator: "\n")
    }
}

extension DemoTransport: ExpressibleByArgument {}
