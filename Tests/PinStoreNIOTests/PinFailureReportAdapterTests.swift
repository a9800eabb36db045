#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreDevServer
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A clock the test moves by hand (the store's clock decides the once-a-day report limit).
final class SettableClock: PinStoreClock {
    private let current: Locked<Date>
    init(_ date: Date = Date()) { current = Locked(date) }
    func now() -> Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

/// Counts the reports the store would send, keeping their bodies.
final class CountingReportSender: PinFailureReportSender {
    let bodies = Locked<[Data]>([])
    func send(_ body: Data, to uri: URL, timeout: TimeInterval) async throws {
        bodies.withLock { $0.append(body) }
    }
    var count: Int { bodies.withLock { $0.count } }
}

/// Pin-failure reports from the pinned URLSession (PinStoreNIO), against real TLS servers on
/// 127.0.0.1 and, for delivery, the `pinstore reports` collector on 127.0.0.1.
@Suite struct PinFailureReportAdapterTests {
    /// A store pinning `localhost` and `127.0.0.1` to `pki/localhost.pem`, reporting to `reportURI`.
    static func store(reportURI: URL, clock: any PinStoreClock = SystemClock(),
                      sender: (any PinFailureReportSender)? = nil) throws -> PinStore {
        let fingerprint = try TestResources.certificate("pki/localhost.pem").fingerprintBase64
        let list = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799},"#
            + #"{"name":"127.0.0.1","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#
        var configuration = PinStore.Configuration(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            identifier: "reports",
            fallbackData: Data(list.utf8),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-reports-\(UUID().uuidString)"),
            requestTimeout: HangGuard.seconds)
        configuration.reportURI = reportURI
        return try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock, reportSender: sender)
    }

    static func session(_ store: PinStore) throws -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        return URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false,
                                                 updateOnMismatch: false, basedOn: base))
    }

    /// Sends `request` and expects it refused.
    static func refused(_ session: URLSession, _ request: URLRequest) async {
        do {
            let (_, response) = try await session.data(for: request)
            Issue.record("expected a refusal, got \(response)")
        } catch {}
    }

    @Test func aPinFailureIsReportedOncePerDistinctFailurePerDay() async throws {
        let attacker = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await attacker.shutdown() } }
        let other = try await TestServer.tls(chain: ["pki/localhost-next-chain.pem"], key: "pki/localhost-next.key.pem")
        defer { Task { await other.shutdown() } }
        let clock = SettableClock()
        let sender = CountingReportSender()
        let store = try Self.store(reportURI: URL(string: "https://reports.pinstore.test/r")!, clock: clock, sender: sender)
        let session = try Self.session(store)
        let reporter = try #require(store.pinFailureReporter)
        func fail(_ server: TestServer) async {
            await Self.refused(session, URLRequest(url: URL(string: "https://localhost:\(server.port)/hello")!))
            await reporter.waitUntilIdle()
        }

        await fail(attacker)
        #expect(sender.count == 1)
        clock.advance(3_600)
        await fail(attacker)
        clock.advance(20 * 3_600)
        await fail(attacker)
        #expect(sender.count == 1)
        // Another failure (another server, another chain) the same day is reported once too.
        await fail(other)
        await fail(other)
        #expect(sender.count == 2)
        // A day after the first report, the first failure is reported again.
        clock.advance(3 * 3_600)
        await fail(attacker)
        #expect(sender.count == 3)

        let reports = try sender.bodies.withLock { $0 }.map { try PinFailureReport(jsonData: $0) }
        #expect(reports.map(\.port) == [attacker.port, other.port, attacker.port])
        #expect(reports.allSatisfy { $0.hostname == "localhost" && $0.reason == "pin_mismatch" && $0.enforcePinning })
        #expect(try reports[0].servedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation }
                == TestResources.chainDER("pki/attacker-chain.pem"))
    }

    @Test func anInterceptedPinnedHostsReportReachesACollectorThatIsItselfPinned() async throws {
        // The collector listens on 127.0.0.1, a host the store pins (to a certificate the
        // collector does not have): the reporter's own unpinned session still delivers.
        let reports = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: reports) }
        let collector = try ReportCollector(directory: reports)
        let collectorServer = try await ListServer.start(responder: collector.responder)
        defer { Task { try? await collectorServer.shutdown() } }
        let attacker = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await attacker.shutdown() } }
        let store = try Self.store(reportURI: collectorServer.baseURL.appendingPathComponent("pin-reports"))

        await Self.refused(try Self.session(store), URLRequest(url: URL(string: "https://127.0.0.1:\(attacker.port)/hello")!))
        await store.pinFailureReporter?.waitUntilIdle()

        let files = try collector.reportFiles()
        #expect(files.count == 1)
        let report = try PinFailureReport(jsonData: try Data(contentsOf: try #require(files.first)))
        #expect(report.hostname == "127.0.0.1")
        #expect(report.port == attacker.port)
        #expect(report.notedHostname == "127.0.0.1")
        #expect(report.reason == "pin_mismatch")
        #expect(report.knownPins == ["cert-sha256=\"\(try TestResources.certificate("pki/localhost.pem").fingerprintBase64)\""])
        #expect(try report.validatedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].commonName }.first == "localhost")
        #expect(try report.servedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation }
                == TestResources.chainDER("pki/attacker-chain.pem"))
    }

    @Test func nothingFromTheRequestAppearsInTheReportOrItsDelivery() async throws {
        let reports = try TestResources.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: reports) }
        let collector = try ReportCollector(directory: reports)
        let received = Locked<[ListServerRequest]>([])
        let collectorServer = try await ListServer.start { request in
            received.withLock { $0.append(request) }
            return collector.handle(request)
        }
        defer { Task { try? await collectorServer.shutdown() } }
        let attacker = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await attacker.shutdown() } }
        let store = try Self.store(reportURI: collectorServer.baseURL.appendingPathComponent("pin-reports"))

        var request = URLRequest(url: URL(string: "https://localhost:\(attacker.port)/private-p4th/account?token=qu3ry-s3cret")!)
        request.httpMethod = "POST"
        request.httpBody = Data("b0dy-s3cret".utf8)
        request.setValue("h3ader-s3cret", forHTTPHeaderField: "X-Api-Key")
        request.setValue("session=c00kie-s3cret", forHTTPHeaderField: "Cookie")
        request.setValue("Bearer auth-s3cret", forHTTPHeaderField: "Authorization")
        await Self.refused(try Self.session(store), request)
        await store.pinFailureReporter?.waitUntilIdle()

        let delivered = try #require(received.withLock { $0 }.first)
        #expect(received.withLock { $0.count } == 1)
        #expect(delivered.method == "POST")
        #expect(delivered.uri == "/pin-reports")
        #expect(delivered.header("Cookie") == nil)
        #expect(delivered.header("Authorization") == nil)
        let everything = delivered.uri + delivered.headers.map { "\($0.0): \($0.1)" }.joined(separator: "\n")
            + String(decoding: delivered.body, as: UTF8.self)
        for secret in ["p4th", "qu3ry", "b0dy", "h3ader", "c00kie", "auth-s3cret", "s3cret"] {
            #expect(!everything.contains(secret), "\(secret) reached the collector")
        }
        let report = try PinFailureReport(jsonData: delivered.body)
        #expect(report.hostname == "localhost")
    }
}
#endif
