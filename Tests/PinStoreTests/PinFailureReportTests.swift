import Foundation
import MetricsTestKit
import PinStore
import PinStoreDevServer
import PinStoreTestSupport
import Testing

/// Records what the reporter would send, instead of sending it; optionally fails every
/// delivery, or holds deliveries until released (a collector that hangs).
final class RecordingReportSender: PinFailureReportSender {
    let bodies = Locked<[Data]>([])
    let fails: Bool
    private let gate = Locked<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    init(fails: Bool = false) { self.fails = fails }

    func send(_ body: Data, to uri: URL, timeout: TimeInterval) async throws {
        bodies.withLock { $0.append(body) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = gate.withLock { gate -> Bool in
                if gate.held { gate.waiting.append(continuation) }
                return gate.held
            }
            if !held { continuation.resume() }
        }
        if fails { throw PinFailureReportDeliveryError(description: "test collector is down") }
    }

    /// Deliveries from now on wait for ``release()``.
    func hold() { gate.withLock { $0.held = true } }

    /// Lets waiting and later deliveries finish.
    func release() {
        let waiting = gate.withLock { gate -> [CheckedContinuation<Void, Never>] in
            gate.held = false
            defer { gate.waiting = [] }
            return gate.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    var reports: [PinFailureReport] {
        get throws { try bodies.withLock { $0 }.map { try PinFailureReport(jsonData: $0) } }
    }
}

/// Pin-failure reports from the core: what a report says, when one is made, and the bounds
/// (rate limit, queue, memory). Decisions come from `PinningEvaluator` over fixture chains.
@Suite struct PinFailureReportTests {
    static let collectorURI = URL(string: "https://reports.pinstore.test/pin-failures")!

    /// A store pinning `lists/static-good.json` (localhost to `pki/localhost.pem`) whose reports go to `reportURI`.
    static func store(_ directory: TemporaryDirectory, clock: ManualClock = .inValidPeriod(), reportURI: URL? = collectorURI,
                      sender: (any PinFailureReportSender)?, limits: PinFailureReporter.Limits = .init(),
                      metrics: TestMetrics = TestMetrics(), policies: [PinPolicy] = [], fallback: Data? = nil) throws -> PinStore {
        var configuration = try StoreFixtures.configuration(directory: directory.url, fallback: try fallback ?? StoreFixtures.list("static-good.json"))
        configuration.policies = policies
        configuration.reportURI = reportURI
        return try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: clock,
                            metricsFactory: metrics, reportSender: sender, reportLimits: limits)
    }

    static func evaluator(_ store: PinStore) -> PinningEvaluator {
        PinningEvaluator(store: store, trustRoots: UpdateAfterRefusalTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
    }

    static func chain(_ file: String) throws -> [Data] { try TestResources.chainDER("pki/\(file)") }

    static func reportCount(_ metrics: TestMetrics, _ result: String) -> Int64 {
        metrics.counterTotal(label: "pinstore_reports_total", dimensions: [("store", "tests"), ("result", result)])
    }

    @Test func aPinMismatchReportCarriesTheDocumentedFields() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let store = try Self.store(directory, sender: sender)
        let served = try Self.chain("attacker-chain.pem")
        _ = Self.evaluator(store).evaluateNow(host: "localhost", port: 8443, presentedChain: served, at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()

        let report = try #require(try sender.reports.first)
        #expect(try sender.reports.count == 1)
        #expect(report.dateTime == ManualClock.inValidPeriod().now())
        #expect(report.hostname == "localhost")
        #expect(report.port == 8443)
        #expect(report.notedHostname == "localhost")
        #expect(report.includeSubdomains == false)
        #expect(report.enforcePinning == true)
        #expect(report.validationResult == 1)
        #expect(report.reason == "pin_mismatch")
        #expect(report.libraryVersion == PinStoreVersion.current)
        #expect(report.knownPins == [#"cert-sha256="QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI=""#])
        #expect(report.effectiveExpirationDate == Date(timeIntervalSince1970: 4_102_444_799))
        // The PEM chains parse back, through OpenSSL, to the certificates of the connection.
        #expect(try report.servedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation } == served)
        let validated = try report.validatedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].commonName }
        #expect(validated == ["localhost", "PinStore Test Intermediate CA", "PinStore Test Root CA"])
    }

    @Test func aReportOnlyFailureIsReportedWithEnforcePinningFalse() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        var configuration = try StoreFixtures.configuration(directory: directory.url, fallback: try StoreFixtures.list("static-good.json"))
        configuration.reportURI = Self.collectorURI
        configuration.enforcement = .reportOnly
        let store = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: ManualClock.inValidPeriod(),
                                 reportSender: sender)
        let decision = Self.evaluator(store).evaluateNow(host: "localhost", port: 8443, presentedChain: try Self.chain("attacker-chain.pem"),
                                                         at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()

        #expect(decision.reportedFailure?.reason == .pinMismatch)
        let report = try #require(try sender.reports.first)
        #expect(report.enforcePinning == false)
        #expect(report.reason == "pin_mismatch")
        #expect(report.validatedCertificateChain.count == 3)
    }

    @Test func theReportUsesRFC7469AndTrustKitKeyNames() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let store = try Self.store(directory, sender: sender)
        _ = Self.evaluator(store).evaluateNow(host: "localhost", port: 443, presentedChain: try Self.chain("attacker-chain.pem"), at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        let body = try #require(sender.bodies.withLock { $0 }.first)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(Set(object.keys) == ["date-time", "hostname", "port", "noted-hostname", "include-subdomains", "enforce-pinning",
                                     "validated-certificate-chain", "served-certificate-chain", "known-pins", "validation-result",
                                     "effective-expiration-date", "pinstore-reason", "pinstore-version"])
        #expect(object["date-time"] as? String == "2030-01-01T00:00:00Z")
    }

    @Test func keyPinsAreListedAsRFC7469PinDirectivesAndPolicyDomainsAsNotedHostnames() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let other = try TestResources.certificate("pki/localhost-next.pem").spkiSHA256Base64
        let backup = try TestResources.certificate("pki/rogue-leaf.pem").spkiSHA256Base64
        let policy = PinPolicy(domain: "pinstore.test", includesSubdomains: true,
                               pins: [.leafKey(spkiSHA256Base64: other), .leafKey(spkiSHA256Base64: backup)])
        // The list pins localhost only: the policy alone applies to *.pinstore.test hosts.
        let store = try Self.store(directory, sender: sender, policies: [policy],
                                   fallback: try PinningEvaluatorTests.list(pinning: "pki/localhost.pem"))
        let served = try TestResources.chainDER("pki/wildcard.pem", "pki/intermediate-ca.pem")
        _ = Self.evaluator(store).evaluateNow(host: "deep.pinstore.test", presentedChain: served, at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        let report = try #require(try sender.reports.first)
        #expect(report.reason == "pin_mismatch")
        #expect(report.hostname == "deep.pinstore.test")
        #expect(report.notedHostname == "pinstore.test")
        #expect(report.includeSubdomains)
        #expect(report.knownPins == ["pin-sha256=\"\(other)\"", "pin-sha256=\"\(backup)\""])
        #expect(report.effectiveExpirationDate == nil)
    }

    @Test func chainTrustFailuresAndAllowedConnectionsAreNotReported() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let metrics = TestMetrics()
        let store = try Self.store(directory, sender: sender, metrics: metrics)
        let evaluator = Self.evaluator(store)
        _ = evaluator.evaluateNow(host: "localhost", presentedChain: try Self.chain("localhost-chain.pem"), at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "localhost", presentedChain: try Self.chain("rogue-leaf.pem"), at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        #expect(sender.bodies.withLock { $0 }.isEmpty)
        #expect(metrics.counterTotal(label: "pinstore_reports_total") == 0)
    }

    @Test func aHostWithoutPinsIsReportedAsNoPinsForHost() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let store = try Self.store(directory, sender: sender)
        _ = Self.evaluator(store).evaluateNow(host: "127.0.0.1", presentedChain: try Self.chain("localhost-chain.pem"), at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        let report = try #require(try sender.reports.first)
        #expect(report.reason == "no_pins_for_host")
        #expect(report.notedHostname == "127.0.0.1")
        #expect(report.knownPins.isEmpty)
        #expect(report.effectiveExpirationDate == nil)
    }

    @Test func withoutAReportURINothingIsSent() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let store = try Self.store(directory, reportURI: nil, sender: sender)
        _ = Self.evaluator(store).evaluateNow(host: "localhost", presentedChain: try Self.chain("attacker-chain.pem"), at: ChainValidatorTests.now)
        #expect(store.pinFailureReporter == nil)
        #expect(sender.bodies.withLock { $0 }.isEmpty)
    }

    @Test func aPlainHTTPReportURIOffTheMachineIsAConfigurationError() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        #expect(throws: PinStoreError.self) {
            _ = try Self.store(directory, reportURI: URL(string: "http://reports.pinstore.test/r")!, sender: nil)
        }
        #expect(throws: PinStoreError.self) {
            _ = try Self.store(directory, reportURI: URL(string: "ftp://127.0.0.1/r")!, sender: nil)
        }
        _ = try Self.store(directory, reportURI: URL(string: "http://127.0.0.1:9/r")!, sender: nil)
    }

    @Test func anIdenticalFailureIsReportedOncePerDayAndAgainAfter() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let clock = ManualClock.inValidPeriod()
        let metrics = TestMetrics()
        let store = try Self.store(directory, clock: clock, sender: sender, metrics: metrics)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        func fail() async {
            _ = evaluator.evaluateNow(host: "localhost", port: 443, presentedChain: attacker, at: ChainValidatorTests.now)
            await store.pinFailureReporter?.waitUntilIdle()
        }
        await fail()
        clock.advance(3_600)
        await fail()
        clock.advance(86_400 - 3_600 - 1)
        await fail()
        #expect(sender.bodies.withLock { $0.count } == 1)
        clock.advance(1)
        await fail()
        #expect(sender.bodies.withLock { $0.count } == 2)
        #expect(Self.reportCount(metrics, "sent") == 2)
        #expect(Self.reportCount(metrics, "duplicate") == 2)
    }

    @Test func distinctFailuresAreEachReported() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let store = try Self.store(directory, sender: sender)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        _ = evaluator.evaluateNow(host: "localhost", port: 443, presentedChain: attacker, at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "localhost", port: 8443, presentedChain: attacker, at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "localhost", port: 443, presentedChain: try Self.chain("localhost-next-chain.pem"), at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        #expect(try sender.reports.map(\.port).sorted { ($0 ?? 0) < ($1 ?? 0) } == [443, 443, 8443])
    }

    @Test func aFloodOfDistinctFailuresWhileTheCollectorHangsIsDroppedBeyondTheQueueBound() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender(fails: true)
        sender.hold()
        let metrics = TestMetrics()
        var limits = PinFailureReporter.Limits()
        limits.maximumPending = 8
        let store = try Self.store(directory, sender: sender, limits: limits, metrics: metrics)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        let reporter = try #require(store.pinFailureReporter)
        for port in 1...3_000 {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
        }
        #expect(reporter.pendingCount <= 8)
        // At most one delivery under way (held) and eight waiting; everything else was dropped.
        #expect(Self.reportCount(metrics, "dropped") >= 3_000 - 9)
        sender.release()
        await reporter.waitUntilIdle()
        #expect(reporter.pendingCount == 0)
        #expect(Self.reportCount(metrics, "failed") + Self.reportCount(metrics, "dropped") == 3_000)
        #expect(Self.reportCount(metrics, "failed") == Int64(sender.bodies.withLock { $0.count }))
    }

    @Test func afterAFailedDeliveryTheCollectorIsLeftAloneForAMinute() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender(fails: true)
        let clock = ManualClock.inValidPeriod()
        let metrics = TestMetrics()
        let store = try Self.store(directory, clock: clock, sender: sender, metrics: metrics)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        func fail(port: Int) async {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
            await store.pinFailureReporter?.waitUntilIdle()
        }
        await fail(port: 1)
        clock.advance(59)
        await fail(port: 2)
        #expect(sender.bodies.withLock { $0.count } == 1)
        #expect(Self.reportCount(metrics, "dropped") == 1)
        clock.advance(1)
        await fail(port: 3)
        #expect(sender.bodies.withLock { $0.count } == 2)
        #expect(Self.reportCount(metrics, "failed") == 2)
    }

    @Test func atMostSixtyReportsAMinuteGoOut() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        let clock = ManualClock.inValidPeriod()
        let metrics = TestMetrics()
        var limits = PinFailureReporter.Limits()
        limits.maximumPending = 1_000
        let store = try Self.store(directory, clock: clock, sender: sender, limits: limits, metrics: metrics)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        for port in 1...100 {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
        }
        await store.pinFailureReporter?.waitUntilIdle()
        #expect(sender.bodies.withLock { $0.count } == 60)
        #expect(Self.reportCount(metrics, "dropped") == 40)
        // The budget refills at one report a second; a dropped failure was not remembered.
        clock.advance(10)
        for port in 61...100 {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
        }
        await store.pinFailureReporter?.waitUntilIdle()
        #expect(sender.bodies.withLock { $0.count } == 70)
    }

    @Test func theRateLimitMemoryForgetsTheOldestBeyondItsBound() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender()
        var limits = PinFailureReporter.Limits()
        limits.maximumRemembered = 16
        limits.maximumPerMinute = 1_000
        let store = try Self.store(directory, sender: sender, limits: limits)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        let reporter = try #require(store.pinFailureReporter)
        for port in 1...200 {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
            await reporter.waitUntilIdle()
            #expect(reporter.rememberedCount <= 16)
        }
        #expect(sender.bodies.withLock { $0.count } == 200)
        // The most recent failures are still remembered (suppressed); the first was forgotten.
        _ = evaluator.evaluateNow(host: "localhost", port: 200, presentedChain: attacker, at: ChainValidatorTests.now)
        await reporter.waitUntilIdle()
        #expect(sender.bodies.withLock { $0.count } == 200)
        _ = evaluator.evaluateNow(host: "localhost", port: 1, presentedChain: attacker, at: ChainValidatorTests.now)
        await reporter.waitUntilIdle()
        #expect(sender.bodies.withLock { $0.count } == 201)
    }

    // MARK: - Through the real URLSession

    @Test func theRealSessionDeliversTheReportToTheLoopbackCollector() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let collector = try ReportCollector(directory: directory.url.appendingPathComponent("reports"))
        let server = try await ListServer.start(responder: collector.responder)
        defer { Task { try? await server.shutdown() } }
        let metrics = TestMetrics()
        let store = try Self.store(directory, reportURI: server.baseURL.appendingPathComponent("pin-reports"), sender: nil, metrics: metrics)
        let served = try Self.chain("attacker-chain.pem")
        _ = Self.evaluator(store).evaluateNow(host: "localhost", port: 443, presentedChain: served, at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()

        let files = try collector.reportFiles()
        #expect(files.count == 1)
        let report = try PinFailureReport(jsonData: try Data(contentsOf: try #require(files.first)))
        #expect(report.hostname == "localhost")
        #expect(report.reason == "pin_mismatch")
        #expect(try report.servedCertificateChain.map { try X509Certificate.certificates(pem: $0)[0].derRepresentation } == served)
        #expect(Self.reportCount(metrics, "sent") == 1)
    }

    @Test func aCollectorRedirectIsNotFollowedAndCountsAsAFailedDelivery() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let elsewhere = try await ListServer.start(responder: { _ in ListServerResponse(status: 204) })
        defer { Task { try? await elsewhere.shutdown() } }
        let redirecting = try await ListServer.start(responder: { _ in
            ListServerResponse(status: 307, headers: [("Location", elsewhere.baseURL.appendingPathComponent("r").absoluteString)])
        })
        defer { Task { try? await redirecting.shutdown() } }
        let metrics = TestMetrics()
        let store = try Self.store(directory, reportURI: redirecting.baseURL.appendingPathComponent("pin-reports"), sender: nil, metrics: metrics)
        _ = Self.evaluator(store).evaluateNow(host: "localhost", presentedChain: try Self.chain("attacker-chain.pem"), at: ChainValidatorTests.now)
        await store.pinFailureReporter?.waitUntilIdle()
        #expect(redirecting.requestCount == 1)
        #expect(elsewhere.requestCount == 0)
        #expect(Self.reportCount(metrics, "failed") == 1)
    }

    @Test func aCollectorThatIsDownDropsReportsWithoutGrowingMemory() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A port held closed for the whole test: connections are refused at once. (A port freed
        // by stopping a server can be taken by another test's server meanwhile.)
        let closed = try ClosedLoopbackPort()
        defer { withExtendedLifetime(closed) {} }
        let closedURI = URL(string: "http://127.0.0.1:\(closed.port)/pin-reports")!
        let metrics = TestMetrics()
        let store = try Self.store(directory, reportURI: closedURI, sender: nil, metrics: metrics)
        let reporter = try #require(store.pinFailureReporter)
        let evaluator = Self.evaluator(store)
        let attacker = try Self.chain("attacker-chain.pem")
        let limits = PinFailureReporter.Limits()
        for port in 1...2_000 {
            _ = evaluator.evaluateNow(host: "localhost", port: port, presentedChain: attacker, at: ChainValidatorTests.now)
            #expect(reporter.pendingCount <= limits.maximumPending)
        }
        await reporter.waitUntilIdle()
        #expect(reporter.pendingCount == 0)
        #expect(reporter.rememberedCount <= limits.maximumRemembered)
        #expect(Self.reportCount(metrics, "sent") == 0)
        #expect(Self.reportCount(metrics, "failed") + Self.reportCount(metrics, "dropped") == 2_000)
        #expect(Self.reportCount(metrics, "dropped") > 0)
    }
}
