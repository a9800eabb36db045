import Foundation
import MetricsTestKit
import PinStoreTestSupport
import PinStoreTesting
import Testing
@testable import PinStore
import PinStoreSigning

/// Where the CT rule sits among ``PinningRules`` and what its modes do. The fixture chains
/// carry no SCTs, so a host under CT with a fresh log list always falls short (too few SCTs);
/// SCTs that do comply are checked through real certificates in `CertificateTransparencyEndToEndTests`.
@Suite struct CertificateTransparencyRuleTests {
    static let now: Int64 = 1_893_456_000

    /// A fresh log list (one log) whose `hosts` give `api`'s mode.
    static func logList(hosts: [CTLogList.Wire.Host] = [], timestamp: Int64 = now - 86_400) throws -> CTLogList {
        let key = try P256PrivateKey().publicKey.derRepresentation
        let log = CTLogList.Wire.Log(key: key.base64EncodedString(), id: nil, operator: "A", type: nil, state: "usable",
                                     stateTimestamp: nil, temporalInterval: nil, previousOperators: nil)
        return try CTLogList(CTLogList.Wire(logListTimestamp: timestamp, profile: nil, logs: [log], hosts: hosts))
    }

    static func context(_ evidence: ChainEvidence, pins: [FingerprintEntry] = [], logs: CTLogList?,
                        domainsConfig: DomainsConfig? = nil) throws -> PinningContext {
        PinningContext(host: try HostName("localhost"), requestedName: "localhost", evidence: evidence, list: PinIndex(entries: pins),
                       fallback: .empty, domainsConfig: domainsConfig, now: now, certificateTransparency: logs)
    }

    static func rules(_ mode: CertificateTransparencyMode, enforcement: PinStore.Configuration.Enforcement = .enforced,
                      checker: CertificateTransparencyChecker? = nil) -> PinningRules {
        PinningRules(enforcement: enforcement, expectedNames: nil, staticPins: .none,
                     certificateTransparency: checker ?? CertificateTransparencyChecker(defaultMode: mode))
    }

    static func pinnedLocalhost() throws -> [FingerprintEntry] { [try PinningRulesTests.entry("localhost")] }
    static func localhost() throws -> ChainEvidence { .validated(try PinningRulesTests.chain("localhost")) }

    @Test func aHostWithoutCTIsNotChecked() throws {
        let decision = Self.rules(.off).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure == nil)
    }

    @Test func anEnforcedHostWithoutSCTsIsRefusedBeforeItsPins() throws {
        let decision = Self.rules(.enforce).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        guard let violation = decision.failure?.reason.certificateTransparencyViolation else {
            Issue.record("expected a CT refusal, got \(decision)")
            return
        }
        // The fixture leaf lives longer than 180 days: 3 SCTs needed, none carried.
        #expect(violation.problem == .tooFewSCTs(required: 3, counted: 0))
    }

    @Test func theSignedListsHostEntryOverridesTheConfiguredDefault() throws {
        let logs = try Self.logList(hosts: [.init(name: "localhost", mode: "enforce")])
        #expect(!Self.rules(.off).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: logs)).isAllowed)
        let off = try Self.logList(hosts: [.init(name: "localhost", mode: "off")])
        #expect(Self.rules(.enforce).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: off)).isAllowed)
    }

    @Test func anATSExceptionEnforcesCTWhateverTheListSays() throws {
        let table = try TransportSecurityExceptionTable([TransportSecurityException(domain: "localhost", requiresCertificateTransparency: true)])
        let checker = CertificateTransparencyChecker(defaultMode: .off, transportSecurity: table)
        let off = try Self.logList(hosts: [.init(name: "localhost", mode: "off")])
        let decision = Self.rules(.off, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: off))
        #expect(decision.failure?.reason.isCertificateTransparency == true)
    }

    @Test func aReportOnlyFailureIsReportedWhileThePinsAllow() throws {
        let decision = Self.rules(.reportOnly).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure?.reason.isCertificateTransparency == true)
    }

    @Test func aReportOnlyFailureNeverLetsThroughWhatThePinsRefuse() throws {
        let attacker = ChainEvidence.validated(try PinningRulesTests.chain("attacker"))
        let decision = Self.rules(.reportOnly).decide(try Self.context(attacker, pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.failure?.reason == .pinMismatch)
    }

    @Test func storeWideReportOnlyDoesNotRelaxAnEnforcedCTFailure() throws {
        let decision = Self.rules(.enforce, enforcement: .reportOnly)
            .decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.failure?.reason.isCertificateTransparency == true)
    }

    @Test func aStaleLogListFailsOpen() throws {
        let fresh = try Self.logList(timestamp: Self.now - 69 * 86_400)
        let stale = try Self.logList(timestamp: Self.now - 71 * 86_400)
        #expect(!Self.rules(.enforce).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: fresh)).isAllowed)
        #expect(Self.rules(.enforce).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: stale)).isAllowed)
    }

    @Test func aListWithoutLogsFailsOpenAndIsCounted() throws {
        let metrics = TestMetrics()
        let checker = CertificateTransparencyChecker(defaultMode: .enforce, metricsFactory: metrics)
        #expect(Self.rules(.enforce, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: nil)).isAllowed)
        #expect(try metrics.expectCounter("pinstore_ct_checks_total", [("store", "default"), ("outcome", "list_stale")]).totalValue == 1)
    }

    @Test func aPrivateAnchorInsideAPublicChainDoesNotExemptIt() throws {
        let checker = CertificateTransparencyChecker(defaultMode: .enforce)
        checker.registerPrivateAnchors([try TestResources.certificate("pki/intermediate-ca.pem")])
        let throughRoot = try #require(ValidatedChain(alreadyValidatedByCaller: try TestResources.chainDER("pki/localhost-chain.pem")
            + [try TestResources.certificate("pki/root-ca.pem").derRepresentation]))
        let decision = Self.rules(.enforce, checker: checker).decide(try Self.context(.validated(throughRoot), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.failure?.reason.isCertificateTransparency == true)
    }

    @Test func anchorsAddedToTheSystemStoreAreNotPrivate() throws {
        let checker = CertificateTransparencyChecker(defaultMode: .enforce)
        checker.registerPrivateAnchors(of: .anchors([try TestResources.certificate("pki/intermediate-ca.pem")], includingSystem: true))
        let decision = Self.rules(.enforce, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.failure?.reason.isCertificateTransparency == true)
    }

    @Test func aReportedPinFailureCarriesTheReportOnlyCTFailure() throws {
        let attacker = ChainEvidence.validated(try PinningRulesTests.chain("attacker"))
        let decision = Self.rules(.reportOnly, enforcement: .reportOnly)
            .decide(try Self.context(attacker, pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.reportedFailure?.reason == .pinMismatch)
        #expect(decision.reportedFailure?.details?.contains("Certificate Transparency") == true)
    }

    @Test func aConfigurationAskingForCTRequiresTheWholeListSignature() throws {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://lists.example.com/list.json")!, publicKey: "unused")
        #expect(!configuration.requiresWholeListSignature)
        configuration.certificateTransparency = .reportOnly
        #expect(configuration.requiresWholeListSignature)
        configuration.certificateTransparency = .off
        configuration.transportSecurityExceptions = [TransportSecurityException(domain: "api.example.com", requiresCertificateTransparency: true)]
        #expect(configuration.requiresWholeListSignature)
    }

    @Test func theLeafViewDecidesHostsTheCTSectionNamesBehindAWildcardLeaf() throws {
        let store = try PinStore(configuration: PinStore.Configuration(
            serviceURL: URL(string: "https://lists.example.com/list.json")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-ct-leaf-\(UUID().uuidString)")))
        let section = try Self.logList(hosts: [.init(name: "api.partner.example", mode: "enforce")])
        let tables = PinningTables(list: nil, fallback: store.fallbackIndex, domainsConfig: nil, certificateTransparency: section)
        let hosts = store.rules.representativeHosts(of: ["*.partner.example"], tables: tables)
        #expect(hosts.map(\.0.text).contains("api.partner.example"))
    }

    @Test func aLeafOnlyAdapterCannotSatisfyCT() throws {
        let decision = Self.rules(.enforce).decide(try Self.context(PinningRulesTests.leafOnly("localhost"), pins: Self.pinnedLocalhost(),
                                                                    logs: Self.logList()))
        guard let violation = decision.failure?.reason.certificateTransparencyViolation else {
            Issue.record("expected a CT refusal, got \(decision)")
            return
        }
        #expect(violation.problem == .needsValidatedChain)
    }

    @Test func aPrivatelyAnchoredChainIsExempt() throws {
        let checker = CertificateTransparencyChecker(defaultMode: .enforce)
        checker.registerPrivateAnchors([try TestResources.certificate("pki/intermediate-ca.pem")])
        let decision = Self.rules(.enforce, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.isAllowed)
    }

    @Test func aPrivatelyAnchoredChainIsCheckedWhenTheConfigurationAsks() throws {
        let checker = CertificateTransparencyChecker(defaultMode: .enforce, checksPrivateAnchors: true)
        checker.registerPrivateAnchors([try TestResources.certificate("pki/intermediate-ca.pem")])
        let decision = Self.rules(.enforce, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: Self.logList()))
        #expect(decision.failure?.reason.isCertificateTransparency == true)
    }

    @Test func aStaleLogListIsCountedAsListStale() throws {
        let metrics = TestMetrics()
        let checker = CertificateTransparencyChecker(defaultMode: .enforce, metricsFactory: metrics)
        let stale = try Self.logList(timestamp: Self.now - 71 * 86_400)
        _ = Self.rules(.enforce, checker: checker).decide(try Self.context(Self.localhost(), pins: Self.pinnedLocalhost(), logs: stale))
        let counter = try metrics.expectCounter("pinstore_ct_checks_total", [("store", "default"), ("outcome", "list_stale")])
        #expect(counter.totalValue == 1)
        #expect(try metrics.expectGauge("pinstore_ct_log_list_age_seconds", [("store", "default")]).lastValue == Double(71 * 86_400))
    }

    @Test func aDuplicatedSCTExtensionIsAnUnreadableRefusal() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let log = try TestCTLog()
        let leaf = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: log)], corruption: .duplicatedExtension)
        let chain = try #require(ValidatedChain(alreadyValidatedByCaller: leaf.chainDER + [pki.root.derRepresentation]))
        let pins = [FingerprintEntry(name: "localhost", fingerprint: leaf.certificate.fingerprint, expires: 4_102_444_799)]
        let checker = CertificateTransparencyChecker(defaultMode: .enforce, checksPrivateAnchors: true)
        let decision = Self.rules(.enforce, checker: checker).decide(try Self.context(.validated(chain), pins: pins, logs: Self.logList()))
        guard let violation = decision.failure?.reason.certificateTransparencyViolation else {
            Issue.record("expected a CT refusal, got \(decision)")
            return
        }
        #expect(violation.problem == .unreadableSCTs)
        #expect(violation.detail.contains("more than once"))
    }

    @Test func anSCTFromAnUnknownLogAsksForOneUpdate() {
        let violation = CertificateTransparencyViolation(problem: .tooFewSCTs(required: 2, counted: 1), sctsFromUnknownLogs: 1, detail: "")
        let decision = PinningDecision.deny(PinningFailure(host: "h", reason: .certificateTransparencyNotMet(violation)))
        #expect(PinStore.wantsUpdate(after: decision, updateOnEmpty: false, updateOnMismatch: true))
        let known = CertificateTransparencyViolation(problem: .tooFewSCTs(required: 2, counted: 1), detail: "")
        #expect(!PinStore.wantsUpdate(after: .deny(PinningFailure(host: "h", reason: .certificateTransparencyNotMet(known))),
                                      updateOnEmpty: true, updateOnMismatch: true))
    }
}

extension PinningFailure.Reason {
    var isCertificateTransparency: Bool {
        if case .certificateTransparencyNotMet = self { return true }
        return false
    }
}
