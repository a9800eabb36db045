import Foundation
import Logging
import MetricsTestKit
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Static pin policies and deny pins (Sources/PinStore/Policies), decided by `PinningEvaluator`
/// over fixture chains validated against the test root (no network).
@Suite struct PinPolicyTests {
    static let anchors: TrustRoots = .anchors([try! TestResources.certificate("pki/root-ca.pem")])
    static let now = ChainValidatorTests.now

    static func spki(_ certificate: String) throws -> String { try TestResources.certificate("pki/\(certificate).pem").spkiSHA256Base64 }
    static func fingerprint(_ certificate: String) throws -> String { try TestResources.certificate("pki/\(certificate).pem").fingerprintBase64 }
    /// A digest no fixture has: the backup pin every policy needs.
    static let backup = Data(repeating: 0xB0, count: 32).base64EncodedString()

    /// A store with `policies` and `denied` keys; `fallback` pins as a static-format list.
    static func store(policies: [PinPolicy] = [], denied: [String] = [], fallback: Data? = nil,
                      clock: ManualClock = .inValidPeriod(), logger: Logger? = nil,
                      metrics: TestMetrics? = nil) throws -> PinStore {
        var configuration = try StoreFixtures.configuration(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-policies-\(UUID().uuidString)"), fallback: fallback)
        configuration.policies = policies
        configuration.deniedPublicKeys = denied
        return try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: clock,
                            logger: logger, metricsFactory: metrics)
    }

    static func decide(_ store: PinStore, _ chain: String, host: String = "localhost") throws -> PinningDecision {
        PinningEvaluator(store: store, trustRoots: anchors, updateOnEmpty: false, updateOnMismatch: false)
            .evaluateNow(host: host, presentedChain: try TestResources.chainDER("pki/\(chain).pem"), at: now)
    }

    static func policy(_ pins: PinIdentity..., domain: String = "localhost", expiration: Date? = nil) -> PinPolicy {
        PinPolicy(domain: domain, pins: pins + [.leafKey(spkiSHA256Base64: backup)], expiration: expiration)
    }

    // MARK: - Identities

    @Test func leafKeyPinAcceptsARenewalWithTheSameKey() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")))])
        #expect(try Self.decide(store, "localhost-renewed-chain").isAllowed)
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
    }

    @Test func certificatePinRefusesARenewalWithTheSameKey() throws {
        let store = try Self.store(policies: [Self.policy(.certificate(sha256Base64: Self.fingerprint("localhost")))])
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
        #expect(try Self.decide(store, "localhost-renewed-chain").failure?.reason == .pinMismatch)
    }

    @Test func leafKeyPinRefusesAnotherKeyUnderTheSameCA() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")))])
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func caKeyPinAcceptsALeafUnderThatCA() throws {
        let store = try Self.store(policies: [Self.policy(.caKey(spkiSHA256Base64: Self.spki("intermediate-ca")))])
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
        #expect(try Self.decide(store, "attacker-chain").isAllowed)
    }

    @Test func caKeyPinRefusesALeafUnderAnotherCA() throws {
        let store = try Self.store(policies: [Self.policy(.caKey(spkiSHA256Base64: Self.spki("intermediate-ca")))])
        #expect(try Self.decide(store, "localhost-other-ca-chain").failure?.reason == .pinMismatch)
    }

    @Test func caKeyPinOnTheRootCoversEveryIntermediateUnderIt() throws {
        let store = try Self.store(policies: [Self.policy(.caKey(spkiSHA256Base64: Self.spki("root-ca")))])
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
        #expect(try Self.decide(store, "localhost-other-ca-chain").isAllowed)
    }

    @Test func caKeyPinNeverMatchesTheLeafKey() throws {
        let store = try Self.store(policies: [Self.policy(.caKey(spkiSHA256Base64: Self.spki("localhost")))])
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .pinMismatch)
    }

    @Test func keyPinAtADepthMatchesOnlyThatPosition() throws {
        let atOne = try Self.store(policies: [Self.policy(.key(spkiSHA256Base64: Self.spki("intermediate-ca"), depth: 1))])
        #expect(try Self.decide(atOne, "localhost-chain").isAllowed)
        let atTwo = try Self.store(policies: [Self.policy(.key(spkiSHA256Base64: Self.spki("intermediate-ca"), depth: 2))])
        #expect(try Self.decide(atTwo, "localhost-chain").failure?.reason == .pinMismatch)
    }

    @Test func certificatePinAtAnyDepthMatchesTheIntermediate() throws {
        let store = try Self.store(policies: [Self.policy(.certificate(sha256Base64: Self.fingerprint("intermediate-ca"), depth: nil))])
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
        #expect(try Self.decide(store, "localhost-other-ca-chain").failure?.reason == .pinMismatch)
    }

    // MARK: - Deny pins

    @Test func aDenyPinWinsOverAMatchingPin() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")))],
                                   denied: [Self.spki("intermediate-ca")])
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .deniedKey(depth: 1))
    }

    @Test func aDenyPinRefusesAListPinnedChainToo() throws {
        let store = try Self.store(denied: [Self.spki("localhost")], fallback: TestResources.fixture("lists/fallback.json"))
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .deniedKey(depth: 0))
        #expect(store.matchPins(commonName: "localhost", certificateChain: try TestResources.chainDER("pki/localhost-chain.pem")) == .untrusted)
    }

    @Test func aDenyPinMakesTheFingerprintFormUntrusted() throws {
        let store = try Self.store(denied: [Self.spki("attacker")], fallback: TestResources.fixture("lists/fallback.json"))
        #expect(store.matchPins(commonName: "localhost", fingerprint: try TestResources.certificate("pki/localhost.pem").fingerprint) == .untrusted)
    }

    // MARK: - Configuration

    @Test func aPolicyWithOnePinIsRefusedForWantOfABackupPin() throws {
        let one = PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: try Self.spki("localhost"))])
        #expect(throws: PinStoreError.self) { try Self.store(policies: [one]) }
        let twiceTheSame = PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: try Self.spki("localhost")),
                                                                  .leafKey(spkiSHA256Base64: try Self.spki("localhost"))])
        let error = #expect(throws: PinStoreError.self) { try Self.store(policies: [twiceTheSame]) }
        #expect(error?.reason.contains("backup pin") == true)
    }

    @Test func aMalformedDigestIsAConfigurationError() throws {
        let policy = PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: "not base64"), .leafKey(spkiSHA256Base64: Self.backup)])
        #expect(throws: PinStoreError.self) { try Self.store(policies: [policy]) }
        #expect(throws: PinStoreError.self) { try Self.store(denied: [Data(count: 31).base64EncodedString()]) }
    }

    @Test func existingConfigurationsKeepDecidingFromTheListAlone() throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/fallback.json"))
        #expect(store.staticPins.isEmpty)
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
    }

    // MARK: - Static policies and the list together

    @Test func staticAndListPinsForTheSameHostAreOnePinSet() throws {
        // The list pins localhost.pem; the policy pins localhost-next's key: either is accepted.
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost-next")))],
                                   fallback: TestResources.fixture("lists/fallback.json"))
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
        #expect(try Self.decide(store, "localhost-next-chain").isAllowed)
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func aPolicyForAnotherHostLeavesThisHostUnpinned() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")), domain: "api.pinstore.test")])
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Expiration

    @Test func aPolicyEnforcesUntilItsExpirationThenTheHostIsUnpinned() throws {
        let clock = ManualClock.inValidPeriod()
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")),
                                                          expiration: clock.now() + 3600)], clock: clock)
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
        clock.advance(3600)
        // Expired: the policy no longer applies, and a host nothing pins is refused (fail
        // closed: moving the clock forward must not open hosts).
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .noPinsForHost(updateResult: nil))
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func anAbsurdExpirationDateIsNeverAndDoesNotTrap() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")),
                                                          expiration: Date(timeIntervalSince1970: 1e300))])
        #expect(try Self.decide(store, "localhost-chain").isAllowed)
    }

    @Test func twoPinsWithTheSameDigestAreNoBackup() throws {
        let key = try Self.spki("localhost")
        #expect(throws: PinStoreError.self) {
            _ = try Self.store(policies: [PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: key), .anyKey(spkiSHA256Base64: key)])])
        }
    }

    @Test func theCACategoryIsNotMetByTheLeaf() throws {
        // A leaf key and an any-position key, both the leaf's: with a match required in each
        // category, the CA category must be met above the leaf.
        let store = try Self.store(policies: [PinPolicy(domain: "localhost", pins: [
            .leafKey(spkiSHA256Base64: try Self.spki("localhost")), .anyKey(spkiSHA256Base64: try Self.spki("rogue-root-ca")),
        ], requiresMatchInEachCategory: true)])
        #expect(try Self.decide(store, "localhost-chain").failure?.reason == .pinMismatch)
        let sameKeyTwice = try Self.store(policies: [PinPolicy(domain: "localhost", pins: [
            .leafKey(spkiSHA256Base64: try Self.spki("localhost")), .anyKey(spkiSHA256Base64: try Self.spki("localhost")),
            .anyKey(spkiSHA256Base64: Self.backup),
        ], requiresMatchInEachCategory: true)])
        #expect(try Self.decide(sameKeyTwice, "localhost-chain").failure?.reason == .pinMismatch)
    }

    @Test func aLoneFingerprintCannotMeetAPolicyThatNeedsACAMatch() throws {
        let store = try Self.store(policies: [PinPolicy(domain: "localhost", pins: [
            .certificate(sha256Base64: try TestResources.certificate("pki/localhost.pem").fingerprintBase64, depth: 0),
            .caKey(spkiSHA256Base64: try Self.spki("intermediate-ca")),
        ], requiresMatchInEachCategory: true)])
        #expect(store.matchPins(commonName: "localhost", fingerprint: try TestResources.certificate("pki/localhost.pem").fingerprint) == .untrusted)
    }

    @Test func anExpiredPolicyIsWarnedAboutAtStartAndCounted() throws {
        let clock = ManualClock.inValidPeriod()
        let (logger, box) = RecordingLogHandler.logger()
        let metrics = TestMetrics()
        _ = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")), expiration: clock.now() - 1)],
                           clock: clock, logger: logger, metrics: metrics)
        #expect(box.all.contains { $0.level == .warning && $0.message.contains("expired") })
        #expect(try metrics.expectGauge("pinstore_expired_policies", [("store", "tests")]).lastValue == 1)
    }

    @Test func anExpiredPolicyDoesNotSilenceTheListPins() throws {
        let clock = ManualClock.inValidPeriod()
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("attacker")), expiration: clock.now() - 1)],
                                   fallback: TestResources.fixture("lists/fallback.json"), clock: clock)
        #expect(try Self.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    // MARK: - Failure text

    @Test func aMismatchNamesTheHostTheChainAndThePinsThatApplied() throws {
        let store = try Self.store(policies: [Self.policy(.caKey(spkiSHA256Base64: Self.spki("intermediate-ca")))],
                                   fallback: TestResources.fixture("lists/fallback.json"))
        let text = try #require(try Self.decide(store, "localhost-other-ca-chain").failure).description
        #expect(text.hasPrefix("localhost:"))
        #expect(text.contains("sha256/\(try Self.spki("localhost-other-ca")): CN=localhost"))
        #expect(text.contains("sha256/\(try Self.spki("other-intermediate-ca"))"))
        #expect(text.contains("certificate \(try Self.fingerprint("localhost-other-ca"))"))
        #expect(text.contains("sha256/\(try Self.spki("intermediate-ca")) (CA key) (policy localhost)"))
        #expect(text.contains("certificate \(try Self.fingerprint("localhost")) at depth 0 (fallback list)"))
    }

    @Test func aListOnlyMismatchAlsoListsTheChain() throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/fallback.json"))
        let text = try #require(try Self.decide(store, "attacker-chain").failure).description
        #expect(text.contains("sha256/\(try Self.spki("attacker"))"))
    }

    // MARK: - The leaf-only rule (AsyncHTTPClient)

    static func leafDecision(_ store: PinStore, _ certificate: String) throws -> PinningDecision {
        store.leafDecision(leaf: try StoreFixtures.der(certificate), peerAddress: LeafPeer.notInLeaf)
    }

    @Test func theLeafRuleHonoursALeafKeyPolicy() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")))])
        #expect(try Self.leafDecision(store, "localhost-renewed").isAllowed)
        #expect(try Self.leafDecision(store, "attacker").failure?.reason == .pinMismatch)
    }

    @Test func theLeafRuleRefusesWhatOnlyTheChainCouldProve() throws {
        let store = try Self.store(policies: [PinPolicy(domain: "localhost", pins: [
            .caKey(spkiSHA256Base64: try Self.spki("intermediate-ca")), .caKey(spkiSHA256Base64: Self.backup)])])
        #expect(try Self.leafDecision(store, "localhost").failure?.reason == .issuerPinsNeedChain)
    }

    @Test func theLeafRuleTreatsExpiredPoliciesAsNoPins() throws {
        let clock = ManualClock.inValidPeriod()
        // localhost.pem is valid for localhost and 127.0.0.1; expired policies cover both.
        let expired = PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: try Self.spki("attacker")), .leafKey(spkiSHA256Base64: Self.backup)],
                                expiration: clock.now() - 1)
        let both = try Self.store(policies: [
            expired, PinPolicy(domain: "127.0.0.1", pins: expired.pins, expiration: expired.expiration),
        ], clock: clock)
        #expect(try Self.leafDecision(both, "localhost").failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func theLeafRuleRefusesEverythingWhileDenyPinsAreSet() throws {
        let store = try Self.store(policies: [Self.policy(.leafKey(spkiSHA256Base64: Self.spki("localhost")))],
                                   denied: [Self.backup])
        #expect(try Self.leafDecision(store, "localhost").failure?.reason == .issuerPinsNeedChain)
        let deniedLeaf = try Self.store(denied: [Self.spki("localhost")])
        #expect(try Self.leafDecision(deniedLeaf, "localhost").failure?.reason == .deniedKey(depth: 0))
    }
}

/// Which hosts a policy's domain covers.
@Suite struct HostPatternTests {
    @Test func aWildcardLeafMayServeADomainPinnedWithItsSubdomains() throws {
        // A *.example.com leaf serves api.example.com itself: the leaf-only rule must check
        // that policy's pins, not skip them.
        #expect(try HostPattern(domain: "api.example.com", includesSubdomains: true).mayMatch(leafName: "*.example.com"))
        #expect(try HostPattern(domain: "api.example.com", includesSubdomains: false).mayMatch(leafName: "*.example.com"))
        #expect(try !HostPattern(domain: "a.b.example.com", includesSubdomains: true).mayMatch(leafName: "*.example.com"))
    }

    static func covers(_ domain: String, includesSubdomains: Bool = false, _ host: String) throws -> Bool {
        try HostPattern(domain: domain, includesSubdomains: includesSubdomains).matches(HostName.lookupKey(host) ?? "")
    }

    @Test func exactMatchesOnlyItselfIgnoringCaseAndATrailingDot() throws {
        #expect(try Self.covers("api.example.com", "api.example.com"))
        #expect(try Self.covers("API.Example.com.", "api.EXAMPLE.com."))
        #expect(try !Self.covers("api.example.com", "a.api.example.com"))
        #expect(try !Self.covers("api.example.com", "example.com"))
    }

    @Test func singleStarIsExactlyOneLabel() throws {
        #expect(try Self.covers("*.example.com", "api.example.com"))
        #expect(try !Self.covers("*.example.com", "example.com"))
        #expect(try !Self.covers("*.example.com", "a.b.example.com"))
    }

    /// OkHttp's `CertificatePinnerTest.checkForHostnameWithDoubleAsterisk`: `**.example.co.uk`
    /// covers `example.co.uk` itself and every name below it.
    @Test func doubleStarIsTheDomainAndEveryNameBelowIt() throws {
        #expect(try Self.covers("**.example.com", "api.example.com"))
        #expect(try Self.covers("**.example.com", "a.b.example.com"))
        #expect(try Self.covers("**.example.com", "example.com"))
        #expect(try !Self.covers("**.example.com", "badexample.com"))
        #expect(try Self.covers("**.example.co.uk", "example.co.uk"))
    }

    @Test func oneLabelSubdomainsAreTheDomainAndOneLabelBelowIt() throws {
        let pattern = try HostPattern(domain: "example.com", subdomains: .oneLabel)
        #expect(pattern.matches("example.com"))
        #expect(pattern.matches("math.example.com"))
        #expect(!pattern.matches("advanced.math.example.com"))
        #expect(!pattern.matches("badexample.com"))
    }

    @Test func theHostsOwnNameIsMoreSpecificThanOneLabelBelowItsParent() throws {
        let own = try HostPattern(domain: "math.example.com", includesSubdomains: true)
        let parent = try HostPattern(domain: "*.example.com", includesSubdomains: false)
        #expect(own.specificity(for: "math.example.com") > parent.specificity(for: "math.example.com"))
    }

    @Test func oneLabelBelowIsMoreSpecificThanAnyDepth() throws {
        let oneLabel = try HostPattern(domain: "*.example.com", includesSubdomains: false)
        let anyDepth = try HostPattern(domain: "example.com", includesSubdomains: true)
        #expect(oneLabel.specificity(for: "api.example.com") > anyDepth.specificity(for: "api.example.com"))
    }

    @Test func theLongerDomainIsMoreSpecificAtAnyDepth() throws {
        let near = try HostPattern(domain: "**.api.example.com", includesSubdomains: false)
        let far = try HostPattern(domain: "**.example.com", includesSubdomains: false)
        #expect(near.specificity(for: "v1.api.example.com") > far.specificity(for: "v1.api.example.com"))
    }

    @Test func patternsEquallySpecificForSomeHostConflict() throws {
        let pairs: [(String, Bool, String, Bool)] = [
            ("example.com", false, "example.com", false),
            ("example.com", false, "example.com", true),
            ("example.com", true, "**.example.com", false),
            ("*.example.com", false, "*.EXAMPLE.com.", false),
            ("127.0.0.1", false, "127.0.0.1", false),
        ]
        for (a, aSub, b, bSub) in pairs {
            let first = try HostPattern(domain: a, includesSubdomains: aSub), second = try HostPattern(domain: b, includesSubdomains: bSub)
            #expect(first.conflicts(with: second), "\(a) \(aSub) / \(b) \(bSub)")
        }
        #expect(try HostPattern(domain: "example.com", subdomains: .oneLabel).conflicts(with: HostPattern(domain: "*.example.com", subdomains: .none)))
    }

    @Test func patternsOfDifferentSpecificityDoNotConflict() throws {
        let pairs: [(String, Bool, String, Bool)] = [
            ("example.com", false, "*.example.com", false),
            ("*.example.com", false, "**.example.com", false),
            ("api.example.com", true, "example.com", true),
            ("api.example.com", false, "*.example.com", false),
        ]
        for (a, aSub, b, bSub) in pairs {
            let first = try HostPattern(domain: a, includesSubdomains: aSub), second = try HostPattern(domain: b, includesSubdomains: bSub)
            #expect(!first.conflicts(with: second), "\(a) \(aSub) / \(b) \(bSub)")
        }
    }

    @Test func includesSubdomainsIsTheDomainAndEverySubdomain() throws {
        #expect(try Self.covers("example.com", includesSubdomains: true, "example.com"))
        #expect(try Self.covers("example.com", includesSubdomains: true, "api.example.com"))
        #expect(try Self.covers("example.com", includesSubdomains: true, "a.b.example.com"))
        #expect(try !Self.covers("example.com", includesSubdomains: true, "badexample.com"))
    }

    @Test func anIPAddressMatchesOnlyItselfInAnyTextForm() throws {
        #expect(try Self.covers("127.0.0.1", "127.0.0.1"))
        #expect(try !Self.covers("127.0.0.1", "127.0.0.2"))
        #expect(try Self.covers("::1", "0:0::1"))
        #expect(throws: PinStoreError.self) { try HostPattern(domain: "127.0.0.1", includesSubdomains: true) }
        #expect(throws: PinStoreError.self) { try HostPattern(domain: "*.0.0.1", includesSubdomains: false) }
    }

    @Test func aPatternOnAPublicSuffixAloneIsRefused() throws {
        for (domain, subdomains) in [("*.com", false), ("**.com", false), ("com", true), ("*.co.uk", false), ("github.io", true)] {
            #expect(throws: PinStoreError.self, "\(domain)") { try HostPattern(domain: domain, includesSubdomains: subdomains) }
        }
        #expect(try Self.covers("com", "com"))   // an exact name is only itself
    }

    @Test func malformedDomainsAreRefused() throws {
        for domain in ["", ".example.com", "a..b", "ex ample.com", "a*.example.com", "*.*.example.com"] {
            #expect(throws: PinStoreError.self, "\(domain)") { try HostPattern(domain: domain, includesSubdomains: false) }
        }
    }
}
