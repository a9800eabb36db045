import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The rules of ``PinningRules``, each on its own, then their order.
@Suite struct PinningRulesTests {
    static func chain(_ name: String) throws -> ValidatedChain {
        try #require(ValidatedChain(alreadyValidatedByCaller: try TestResources.chainDER("pki/\(name)-chain.pem")))
    }

    static func leafOnly(_ name: String) throws -> ChainEvidence {
        let certificate = try TestResources.certificate("pki/\(name).pem")
        let fingerprint: Digest32 = try #require(Digest32(certificate.fingerprint))
        let key: Digest32 = try #require(Digest32(SHA256Digest.hash(certificate.subjectPublicKeyInfo)))
        return .leafOnly(.init(der: certificate.derRepresentation, fingerprint: fingerprint, key: key))
    }

    static func entry(_ certificate: String, name: String = "localhost", depth: Int = 0, expires: Int64 = 4_102_444_799) throws -> FingerprintEntry {
        FingerprintEntry(name: name, fingerprint: try TestResources.certificate("pki/\(certificate).pem").fingerprint, expires: expires, depth: depth)
    }

    static func context(_ evidence: ChainEvidence, host: String = "localhost", pins: [FingerprintEntry] = [],
                        domainsConfig: DomainsConfig? = nil) throws -> PinningContext {
        PinningContext(host: try HostName(host), requestedName: host, evidence: evidence, list: PinIndex(entries: pins),
                       fallback: .empty, domainsConfig: domainsConfig, now: 1_893_456_000)
    }

    static func key(_ certificate: String) throws -> Digest32 {
        try #require(Digest32(SHA256Digest.hash(try TestResources.certificate("pki/\(certificate).pem").subjectPublicKeyInfo)))
    }

    // MARK: - ExpectedHostRule

    @Test func everyHostMeetsTheExpectedHostRuleWithoutExpectedNames() throws {
        #expect(ExpectedHostRule(expected: nil).check(try Self.context(.validated(Self.chain("localhost")))) == .meetsRule)
    }

    @Test func anExpectedHostMeetsTheExpectedHostRule() throws {
        #expect(ExpectedHostRule(expected: ["localhost"]).check(try Self.context(.validated(Self.chain("localhost")))) == .meetsRule)
    }

    @Test func anUnexpectedHostFailsTheExpectedHostRuleBeyondAnyRelaxation() throws {
        let result = ExpectedHostRule(expected: ["api.pinstore.test"]).check(try Self.context(.validated(Self.chain("localhost"))))
        #expect(result == .failsRule(.hostNotExpected, enforcing: true, relaxable: false))
    }

    // MARK: - DeniedKeyRule

    @Test func aChainWithoutDeniedKeysMeetsTheDeniedKeyRule() throws {
        let rule = DeniedKeyRule(denied: [try Self.key("rogue-root-ca")])
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")))) == .meetsRule)
    }

    @Test func aDeniedIntermediateFailsTheDeniedKeyRuleAtItsDepth() throws {
        let rule = DeniedKeyRule(denied: [try Self.key("intermediate-ca")])
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")))) == .failsRule(.deniedKey(depth: 1), enforcing: true, relaxable: false))
    }

    @Test func aLeafAloneFailsTheDeniedKeyRuleBecauseTheKeysAboveItCannotBeSeen() throws {
        let rule = DeniedKeyRule(denied: [try Self.key("rogue-root-ca")])
        #expect(rule.check(try Self.context(Self.leafOnly("localhost"))) == .failsRule(.issuerPinsNeedChain, enforcing: true, relaxable: false))
    }

    // MARK: - PinSetRule

    @Test func aMatchingListPinPinsTheConnection() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("localhost")])) == .pinned)
    }

    @Test func pinsThatApplyAndDoNotMatchAreAnEnforcedMismatch() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(.validated(Self.chain("attacker")), pins: [Self.entry("localhost")]))
            == .failsRule(.pinMismatch, enforcing: true, relaxable: true))
    }

    @Test func aHostNothingPinsHasNoPins() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("localhost", name: "other.example")]))
            == .failsRule(.noPinsForHost(updateResult: nil), enforcing: true, relaxable: true))
    }

    @Test func anExpiredPinNoLongerApplies() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("localhost", expires: 1_000)]))
            == .failsRule(.noPinsForHost(updateResult: nil), enforcing: true, relaxable: true))
    }

    @Test func anIssuerPinMatchesTheValidatedChain() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("intermediate-ca", depth: 1)])) == .pinned)
    }

    @Test func aLeafAloneCannotProveAnIssuerPin() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: true)
        #expect(rule.check(try Self.context(Self.leafOnly("localhost"), pins: [Self.entry("intermediate-ca", depth: 1)]))
            == .failsRule(.issuerPinsNeedChain, enforcing: true, relaxable: true))
    }

    @Test func aListRunningReportOnlyDoesNotEnforceItsMismatch() throws {
        let rule = PinSetRule(staticPins: .none, listEnforced: false)
        #expect(rule.check(try Self.context(.validated(Self.chain("attacker")), pins: [Self.entry("localhost")]))
            == .failsRule(.pinMismatch, enforcing: false, relaxable: true))
    }

    @Test func anEnforcingPolicyEnforcesBesideAReportOnlyList() throws {
        let policy = try CompiledPolicy(PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: try PinPolicyTests.spki("localhost")),
                                                                              .leafKey(spkiSHA256Base64: PinPolicyTests.backup)]))
        let rule = PinSetRule(staticPins: StaticPins(policies: [policy], denied: []), listEnforced: false)
        #expect(rule.check(try Self.context(.validated(Self.chain("attacker")), pins: [Self.entry("localhost")]))
            == .failsRule(.pinMismatch, enforcing: true, relaxable: true))
    }

    // MARK: - Relaxations

    static func failure(_ reason: PinningFailure.Reason) -> PinningFailure { PinningFailure(host: "localhost", reason: reason) }

    @Test func theDomainsConfigAllowsAnUnpinnedHostItExempts() throws {
        let config = try #require(try DomainsConfig(challengeBody: Data(#"{"fingerprints": [], "domainsConfig": {"sslPinningRequiredForUnlisted": false}}"#.utf8)))
        let context = try Self.context(.validated(Self.chain("localhost")), domainsConfig: config)
        #expect(DomainsConfigRelaxation().relax(Self.failure(.noPinsForHost(updateResult: nil)), enforcing: true, context)?.isAllowed == true)
    }

    @Test func theDomainsConfigNeverRelaxesAPinMismatch() throws {
        let config = try #require(try DomainsConfig(challengeBody: Data(#"{"fingerprints": [], "domainsConfig": {"sslPinningRequiredForUnlisted": false}}"#.utf8)))
        let context = try Self.context(.validated(Self.chain("localhost")), domainsConfig: config)
        #expect(DomainsConfigRelaxation().relax(Self.failure(.pinMismatch), enforcing: true, context) == nil)
    }

    @Test func reportOnlyReportsAFailureNobodyEnforces() throws {
        let context = try Self.context(.validated(Self.chain("localhost")))
        #expect(ReportOnlyRelaxation(storeWide: false).relax(Self.failure(.pinMismatch), enforcing: false, context)?.reportedFailure != nil)
    }

    @Test func reportOnlyLeavesAnEnforcedFailureAlone() throws {
        let context = try Self.context(.validated(Self.chain("localhost")))
        #expect(ReportOnlyRelaxation(storeWide: false).relax(Self.failure(.pinMismatch), enforcing: true, context) == nil)
    }

    @Test func storeWideReportOnlyReportsAnEnforcedFailure() throws {
        let context = try Self.context(.validated(Self.chain("localhost")))
        #expect(ReportOnlyRelaxation(storeWide: true).relax(Self.failure(.pinMismatch), enforcing: true, context)?.reportedFailure != nil)
    }

    // MARK: - The order

    @Test func aDeniedKeyRefusesAChainAPinWouldAllow() throws {
        let staticPins = StaticPins(policies: [], denied: [try Self.key("intermediate-ca")])
        let rules = PinningRules(enforcement: .reportOnly, expectedNames: nil, staticPins: staticPins)
        let decision = rules.decide(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("localhost")]))
        #expect(decision.failure?.reason == .deniedKey(depth: 1))
    }

    @Test func anUnexpectedHostIsRefusedEvenInReportOnlyModeAndWhenPinned() throws {
        let rules = PinningRules(enforcement: .reportOnly, expectedNames: ["api.pinstore.test"], staticPins: .none)
        let decision = rules.decide(try Self.context(.validated(Self.chain("localhost")), pins: [Self.entry("localhost")]))
        #expect(decision.failure?.reason == .hostNotExpected)
    }

    @Test func theRulesWithoutRelaxationsAnswerWhetherTheChainIsPinned() throws {
        let rules = PinningRules(enforcement: .reportOnly, expectedNames: nil, staticPins: .none)
        let context = try Self.context(.validated(Self.chain("attacker")), pins: [Self.entry("localhost")])
        #expect(rules.decide(context).reportedFailure?.reason == .pinMismatch)
        #expect(rules.decide(context, relaxing: false).failure?.reason == .pinMismatch)
    }
}
