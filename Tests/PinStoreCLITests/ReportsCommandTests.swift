import Foundation
import PinStore
import PinStoreDevServer
import PinStoreTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `pinstore reports` and the collector behind it: pin-failure reports POSTed on loopback
/// become files.
@Suite struct ReportsCommandTests {
    /// A store pinning localhost to `pki/localhost.pem` that reports to `reportURI`.
    static func reportingStore(_ reportURI: URL, directory: URL) throws -> PinStore {
        let fingerprint = try TestResources.certificate("pki/localhost.pem").fingerprintBase64
        var configuration = PinStore.Configuration(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            fallbackData: Data(#"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#.utf8),
            storageDirectory: directory,
            requestTimeout: HangGuard.seconds)
        configuration.reportURI = reportURI
        // The delivery's deadline is a hang guard here: the collector on loopback answers at
        // once, but the default 15 s passed on a machine busy with builds and no file came.
        var limits = PinFailureReporter.Limits()
        limits.timeout = RunningProcess.hangGuard
        return try PinStore(configuration: configuration, fetcher: CrashDrillTests.Offline(), clock: SystemClock(), reportLimits: limits)
    }

    /// One pin mismatch (the attacker chain for localhost:443), reported through the real URLSession.
    static func failOnce(_ store: PinStore) async throws {
        let evaluator = PinningEvaluator(store: store, trustRoots: .anchors([try TestResources.certificate("pki/root-ca.pem")]),
                                         updateOnEmpty: false, updateOnMismatch: false)
        let decision = evaluator.evaluateNow(host: "localhost", port: 443, presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"))
        #expect(decision.failure?.reason == .pinMismatch)
        await store.pinFailureReporter?.waitUntilIdle()
    }

    @Test func reportsWritesEachPostedReportToAFileAndStopsOnSIGINT() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = directory.appendingPathComponent("reports")
        let binary = try #require(PinstoreBinary.path, "pinstore was not built")
        let command = try RunningProcess(binary, ["reports", "--dir", reports.path, "--port", "0"])
        let url = try #require(try await command.waitForOutput(matching: #"http://127\.0\.0\.1:[0-9]+/pin-reports"#), "no URL: \(command.stderr)")

        try await Self.failOnce(try Self.reportingStore(try #require(URL(string: url)), directory: directory.appendingPathComponent("store")))
        let status = try await command.stop(with: SIGINT)

        #expect(status == 0)
        let files = try FileManager.default.contentsOfDirectory(at: reports, includingPropertiesForKeys: nil)
        #expect(files.count == 1)
        let report = try PinFailureReport(jsonData: try Data(contentsOf: try #require(files.first)))
        #expect(report.hostname == "localhost")
        #expect(report.port == 443)
        #expect(report.enforcePinning)
        #expect(report.knownPins == ["cert-sha256=\"\(try TestResources.certificate("pki/localhost.pem").fingerprintBase64)\""])
        #expect(try report.validatedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].commonName }
                == ["localhost", "PinStore Test Intermediate CA", "PinStore Test Root CA"])
        #expect(command.stdout.contains("POST /pin-reports -> 204"))
    }

    @Test func reportsHelpShowsAnExample() async throws {
        let result = try await PinstoreBinary.run(["reports", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("pinstore reports --dir"))
    }

    @Test func theCollectorRefusesBodiesThatAreNotJSONObjects() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory)
        #expect(collector.handle(ListServerRequest(method: "POST", uri: "/r", body: Data("not json".utf8))).status == 400)
        #expect(collector.handle(ListServerRequest(method: "POST", uri: "/r", body: Data("[1,2]".utf8))).status == 400)
        #expect(try collector.reportFiles().isEmpty)
    }

    static func post(_ collector: ReportCollector, _ n: Int, padding: Int = 0) -> Int {
        collector.handle(ListServerRequest(method: "POST", uri: "/r",
                                           body: Data(#"{"n":\#(n),"pad":"\#(String(repeating: "x", count: padding))"}"#.utf8))).status
    }

    static func keptNumbers(_ collector: ReportCollector) throws -> [Int] {
        try collector.reportFiles().map { file in
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
            return object?["n"] as? Int ?? -1
        }
    }

    @Test func theCollectorKeepsOnlyTheNewestReportsBeyondItsFileLimit() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory, limits: .init(maximumFiles: 3))
        for n in 1...10 { #expect(Self.post(collector, n) == 204) }
        #expect(try Self.keptNumbers(collector) == [8, 9, 10])
    }

    @Test func theCollectorKeepsOnlyTheNewestReportsBeyondItsByteLimit() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Each report is a little over 1,000 bytes: 2,500 bytes hold two.
        let collector = try ReportCollector(directory: directory, limits: .init(maximumBytes: 2_500))
        for n in 1...6 { #expect(Self.post(collector, n, padding: 1_000) == 204) }
        #expect(try Self.keptNumbers(collector) == [5, 6])
    }

    @Test func theCollectorKeepsTheNewestReportEvenWhenItAloneExceedsTheByteLimit() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory, limits: .init(maximumBytes: 10))
        for n in 1...3 { #expect(Self.post(collector, n, padding: 100) == 204) }
        #expect(try Self.keptNumbers(collector) == [3])
    }

    @Test func reportsRefusesAFileLimitBelowOne() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await PinstoreBinary.run(["reports", "--dir", directory.path, "--max-files", "0"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--max-files"))
    }

    @Test func theCollectorAcceptsOnlyPOST() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory)
        let response = collector.handle(ListServerRequest(method: "GET", uri: "/r"))
        #expect(response.status == 405)
        #expect(response.headers.contains { $0.0 == "Allow" && $0.1 == "POST" })
    }

    @Test func theCollectorNamesFilesItselfWhateverThePath() throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory.appendingPathComponent("in"))
        let response = collector.handle(ListServerRequest(method: "POST", uri: "/../../escape.json", body: Data("{}".utf8)))
        #expect(response.status == 204)
        let files = try collector.reportFiles()
        #expect(files.count == 1)
        #expect(files.first?.deletingLastPathComponent().lastPathComponent == "in")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("escape.json").path))
    }

    @Test func anOversizedBodyIsRefusedByTheServer() async throws {
        let directory = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let collector = try ReportCollector(directory: directory)
        let server = try await ListServer.start(responder: collector.responder)
        defer { Task { try? await server.shutdown() } }
        var request = URLRequest(url: server.baseURL.appendingPathComponent("pin-reports"))
        request.httpMethod = "POST"
        let body = Data("{\"padding\":\"".utf8) + Data(repeating: UInt8(ascii: "a"), count: ListServerRequest.maximumBodySize) + Data("\"}".utf8)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.upload(for: request, from: body)
        #expect((response as? HTTPURLResponse)?.statusCode == 413)
        #expect(try collector.reportFiles().isEmpty)
    }
}
