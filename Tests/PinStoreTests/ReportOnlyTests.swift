import Foundation
import Logging
import MetricsTestKit
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Report-only (audit) mode, decided by `PinningEvaluator.pinDecision` and the leaf rule over
/// fixture chains validated against the test root (no network). `attacker` chains to the trusted
/// CA with a key nobody pinned: the impostor report-only mode must let through and report.
@Suite struct ReportOnlyTests {
    static let now = ChainValidatorTests.now

    static func store(enforcement: PinStore.Configuration.Enforcement, policies: [PinPolicy] = [], denied: [String] = [],
                      fallback: Data? = nil, expectedCommonNames: [String]? = nil, fetcher: ScriptedFetcher = .serving(Data()),
                      logger: Logger? = nil, metrics: TestMetrics? = nil) throws -> PinStore {
        var configuration = try StoreFixtures.configuration(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-report-only-\(UUID().uuidString)"), fallback: fallback,
            expectedCommonNames: expectedCommonNames)
        configuration.policies = policies
        configuration.deniedPublicKeys = denied
        configuration.enforcement = enforcement
        return try PinStore(configuration: configuration, fetcher: fetcher, clock: ManualClock.inValidPeriod(), logger: logger, metricsFactory: metrics)
    }

    static func decide(_ store: PinStore, _ chain: String, host: String = "localhost") throws -> PinningDecision {
        PinningEvaluator(store: store, trustRoots: PinPolicyTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
            .evaluateNow(host: host, presentedChain: try TestResources.chainDER("pki/\(chain).pem"), at: now)
    }

    static func pinsLocalhost() throws -> Data { try TestResources.fixture("lists/static-good.json") }

    static func policy(_ certificate: String, reportOnly: Bool) throws -> PinPolicy {
        PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: try PinPolicyTests.spki(certificate)),
                                              .leafKey(spkiSHA256Base64: PinPolicyTests.backup)],
                  reportOnly: reportOnly)
    }

    // MARK: - What report-only relaxes

    @Test func reportOnlyStoreLetsAPinMismatchThroughAndNamesTheFailure() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        let decision = try Self.decide(store, "attacker-chain")
        guard case .reportOnly(let failure, let chain) = decision else {
            Issue.record("expected a report-only failure, got \(decision)")
            return
        }
        #expect(failure.reason == .pinMismatch)
        #expect(decision.isAllowed)
        #expect(decision.failure == nil)
        #expect(chain.count == 3)
    }

    @Test func enforcedStoreStillRefusesAPinMismatch() throws {
        let store = try Self.store(enforcement: .enforced, fallback: Self.pinsLocalhost())
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func reportOnlyStoreLetsAHostWithoutPinsThrough() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        let decision = try Self.decide(store, "localhost-chain", host: "127.0.0.1")
        #expect(decision.reportedFailure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func pinnedChainIsPlainlyAllowedInReportOnlyMode() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        guard case .allow = try Self.decide(store, "localhost-chain") else {
            Issue.record("a matching pin is an allow, not a report")
            return
        }
    }

    // MARK: - What report-only never relaxes

    @Test func reportOnlyStoreStillRefusesAChainTheNormalEvaluationRefuses() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        guard case .chainNotTrusted = try Self.decide(store, "rogue-leaf").failure?.reason else {
            Issue.record("a rogue chain must be refused by the normal evaluation")
            return
        }
    }

    @Test func reportOnlyStoreStillRefusesADeniedKey() throws {
        let store = try Self.store(enforcement: .reportOnly, denied: [try PinPolicyTests.spki("attacker")], fallback: Self.pinsLocalhost())
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .deniedKey(depth: 0))
    }

    @Test func reportOnlyStoreStillRefusesAnUnexpectedHost() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost(), expectedCommonNames: ["localhost"])
        #expect(try Self.decide(store, "localhost-chain", host: "127.0.0.1").failure?.reason == .hostNotExpected)
    }

    // MARK: - Scopes: the list, a policy

    @Test func reportOnlyListLetsAMismatchOfTheListsPinsThrough() throws {
        let store = try Self.store(enforcement: .listReportOnly, fallback: Self.pinsLocalhost())
        #expect(try Self.decide(store, "attacker-chain").reportedFailure?.reason == .pinMismatch)
    }

    @Test func reportOnlyListStillEnforcesAnEnforcingPolicyOnTheSameHost() throws {
        let store = try Self.store(enforcement: .listReportOnly, policies: [Self.policy("localhost", reportOnly: false)],
                                   fallback: Self.pinsLocalhost())
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func reportOnlyPolicyLetsAMismatchThroughWhenItAlonePinsTheHost() throws {
        let store = try Self.store(enforcement: .enforced, policies: [Self.policy("localhost", reportOnly: true)])
        #expect(try Self.decide(store, "attacker-chain").reportedFailure?.reason == .pinMismatch)
    }

    @Test func reportOnlyPolicyDoesNotRelaxEnforcedListPinsOnTheSameHost() throws {
        let store = try Self.store(enforcement: .enforced, policies: [Self.policy("localhost", reportOnly: true)],
                                   fallback: Self.pinsLocalhost())
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func reportOnlyPolicyDoesNotRelaxAHostWithoutPins() throws {
        let store = try Self.store(enforcement: .enforced, policies: [Self.policy("localhost", reportOnly: true)])
        #expect(try Self.decide(store, "localhost-chain", host: "127.0.0.1").failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Updates, reporting

    @Test func theUpdateAfterAMismatchStillRunsBeforeTheReportOnlyDecision() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.enforcement = .reportOnly
        let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .ok)
        // The rotation is published: the update after the mismatch turns it into an allow.
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! SignedLists.staticList(["localhost", "attacker"])) }
        let evaluator = PinningEvaluator(store: store, trustRoots: PinPolicyTests.anchors, updateOnEmpty: false, updateOnMismatch: true)
        let decision = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: Self.now)
        #expect(fetcher.requestCount == 2)
        guard case .allow = decision else {
            Issue.record("expected the updated list to allow the rotated certificate, got \(decision)")
            return
        }
    }

    @Test func aReportOnlyFailureReachesTheDecisionStreamNotEnforced() async throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        let stream = store.decisions()
        _ = try Self.decide(store, "attacker-chain")
        _ = try Self.decide(store, "rogue-leaf")
        var iterator = stream.makeAsyncIterator()
        let reported = await iterator.next()
        #expect(reported?.enforced == false)
        #expect(reported?.failure?.reason == .pinMismatch)
        #expect(reported?.decision.isAllowed == true)
        let refused = await iterator.next()
        #expect(refused?.enforced == true)
        #expect(refused?.decision.isAllowed == false)
    }

    @Test func aReportOnlyFailureIsCountedAsReported() throws {
        let metrics = TestMetrics()
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost(), metrics: metrics)
        _ = try Self.decide(store, "attacker-chain")
        _ = try Self.decide(store, "localhost-chain", host: "127.0.0.1")
        func count(_ outcome: String, _ reason: String) -> Int64 {
            metrics.counterTotal(label: "pinstore_decisions_total", dimensions: [("store", "tests"), ("outcome", outcome), ("reason", reason)])
        }
        #expect(count("reported", "pin_mismatch") == 1)
        #expect(count("reported", "no_pins_for_host") == 1)
        #expect(count("denied", "pin_mismatch") == 0)
        #expect(count("allowed", "pinned") == 0)
    }

    @Test func aReportOnlyFailureIsLoggedAtDebugOnly() throws {
        let (logger, box) = RecordingLogHandler.logger()
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost(), logger: logger)
        let atStartUp = box.all.count
        _ = try Self.decide(store, "attacker-chain")
        let lines = box.all.dropFirst(atStartUp).filter { $0.message.contains("report-only") }
        #expect(lines.count == 1)
        #expect(lines.allSatisfy { $0.level == .debug })
    }

    @Test func aReportOnlyStoreSaysSoOnceAtStartUp() throws {
        let (logger, box) = RecordingLogHandler.logger()
        _ = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost(), logger: logger)
        let lines = box.all.filter { $0.message.contains("report-only") }
        #expect(lines.count == 1)
        #expect(lines.allSatisfy { $0.level == .info })
    }

    @Test func anEnforcingStoreSaysNothingAboutReportOnlyAtStartUp() throws {
        let (logger, box) = RecordingLogHandler.logger()
        _ = try Self.store(enforcement: .enforced, fallback: Self.pinsLocalhost(), logger: logger)
        #expect(!box.all.contains { $0.message.contains("report-only") })
    }

    // MARK: - The leaf rule (AsyncHTTPClient)

    @Test func leafRuleLetsAnUnpinnedLeafThroughInReportOnlyMode() throws {
        let store = try Self.store(enforcement: .reportOnly, fallback: Self.pinsLocalhost())
        let decision = store.leafDecision(leaf: try StoreFixtures.der("attacker"), peerAddress: LeafPeer.notInLeaf)
        #expect(decision.reportedFailure?.reason == .pinMismatch)
    }

    @Test func leafRuleStillRefusesAnUnpinnedLeafWhenEnforced() throws {
        let store = try Self.store(enforcement: .enforced, fallback: Self.pinsLocalhost())
        #expect(store.leafDecision(leaf: try StoreFixtures.der("attacker"), peerAddress: LeafPeer.notInLeaf).failure?.reason == .pinMismatch)
    }

    @Test func leafRuleStillRefusesWhenDenyPinsAreConfigured() throws {
        let store = try Self.store(enforcement: .reportOnly, denied: [try PinPolicyTests.spki("rogue-leaf")], fallback: Self.pinsLocalhost())
        #expect(!store.leafDecision(leaf: try StoreFixtures.der("attacker"), peerAddress: LeafPeer.notInLeaf).isAllowed)
    }

    @Test func leafRuleEnforcesAnEnforcingPolicyUnderAReportOnlyList() throws {
        let store = try Self.store(enforcement: .listReportOnly, policies: [Self.policy("localhost", reportOnly: false)],
                                   fallback: Self.pinsLocalhost())
        #expect(store.leafDecision(leaf: try StoreFixtures.der("attacker"), peerAddress: LeafPeer.notInLeaf).failure?.reason == .pinMismatch)
    }
}
