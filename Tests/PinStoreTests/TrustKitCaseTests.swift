import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// TrustKit's `TSKPinConfigurationTests` (which policy a host gets) and `TSKPinningValidatorTests`
/// (what the pins decide), replayed with ``PinPolicy``: TrustKit's `kTSKIncludeSubdomains` is
/// ``PinPolicy/includesSubdomains`` (the domain and every depth), its pins match any certificate
/// of the validated chain (``PinIdentity/anyKey(spkiSHA256Base64:)``), `kTSKEnforcePinning = NO`
/// is ``PinPolicy/reportOnly``.
///
/// Differences PinStore keeps on purpose, each stated by a test: a host no policy covers is
/// refused (TrustKit: `TSKTrustDecisionDomainNotPinned`, left to the system), an expired policy
/// fails closed, and a narrower report-only or expired policy never turns off a broader enforcing one.
@Suite struct TrustKitCaseTests {
    typealias P = PeerCase

    static func policy(_ domain: String, _ certificates: [String], fakes: [String] = [P.fake1],
                       includesSubdomains: Bool = false, expiration: Date? = nil) throws -> PinPolicy {
        P.anyKeyPolicy(domain, try certificates.map { try P.spki($0) } + fakes, includesSubdomains: includesSubdomains,
                       expiration: expiration)
    }

    // MARK: - TSKPinConfigurationTests: which policy applies

    // testPinOnePublicKey: the same hash twice is one pin, refused (TrustKit requires a backup pin too).
    @Test func testPinOnePublicKey() throws {
        let key = try P.spki(P.a)
        #expect(P.configurationError([P.anyKeyPolicy("www.good.com", [key, key])])?.code == .invalidConfiguration)
    }

    // testGetConfigurationPinningEnabled
    @Test func testGetConfigurationPinningEnabled() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.a])])
        #expect(P.check(store, "www.good.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "www.good.com", try P.chain(P.b)) == .untrusted)
    }

    // testGetConfigurationPinningDisabled / testDomainNotPinned: TrustKit leaves a host it has no
    // policy for to the system (TSKTrustDecisionDomainNotPinned); PinStore refuses it as unpinned.
    @Test(arguments: ["www.datatheorem.com", "www.nonpinned.com"])
    func anUnpinnedDomainIsRefusedUnlikeTrustKit(_ host: String) throws {
        let store = try P.store([try Self.policy("good.com", [P.a])])
        #expect(P.check(store, host, try P.chain(P.a)) == .empty)
    }

    // testIncludeSubdomainsEnabled
    @Test func testIncludeSubdomainsEnabled() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "www.good.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "www.good.com", try P.chain(P.a)) == .trusted)
    }

    // testIncludeSubdomainsEnabledSameDomain
    @Test func testIncludeSubdomainsEnabledSameDomain() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "good.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "good.com", try P.chain(P.a)) == .trusted)
    }

    // testIncludeSubdomainsEnabledSubSubDomain: any depth.
    @Test func testIncludeSubdomainsEnabledSubSubDomain() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "sub.www.good.com.www.good.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "sub.www.good.com.www.good.com", try P.chain(P.a)) == .trusted)
    }

    // testIncludeSubdomainsEnabledNotSubdomain
    @Test func testIncludeSubdomainsEnabledNotSubdomain() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "good.com.otherdomaingood.com", try P.chain(P.b)) == .empty)
    }

    // testIncludeSubdomainsEnabledNotSubdomainDifferentTld
    @Test func testIncludeSubdomainsEnabledNotSubdomainDifferentTld() throws {
        let store = try P.store([try Self.policy("good.net", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "test.good.com", try P.chain(P.b)) == .empty)
    }

    // testIncludeSubdomainsEnabledForSuffix: includeSubdomains on a public suffix is refused.
    @Test func testIncludeSubdomainsEnabledForSuffix() throws {
        #expect(P.configurationError([try Self.policy("com", [P.a], includesSubdomains: true)])?.code == .invalidConfiguration)
    }

    // testIncludeSubdomainsDisabled
    @Test func testIncludeSubdomainsDisabled() throws {
        let store = try P.store([try Self.policy("good.com", [P.a])])
        #expect(P.check(store, "www.good.com", try P.chain(P.b)) == .empty)
        #expect(P.check(store, "good.com", try P.chain(P.b)) == .untrusted)
    }

    // testIncludeSubdomainsEnabledAndSpecificConfiguration: www.good.com's own policy takes
    // precedence over good.com's; good.com's pin does not admit a chain for www.good.com.
    @Test func testIncludeSubdomainsEnabledAndSpecificConfiguration() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true),
                                 try Self.policy("www.good.com", [P.c])])
        #expect(P.check(store, "www.good.com", try P.chain(P.c)) == .trusted)
        #expect(P.check(store, "www.good.com", try P.chain(P.a)) == .untrusted)
        #expect(P.check(store, "mail.good.com", try P.chain(P.a)) == .trusted)
    }

    // testIncludeSubdomainsEnabledAndOverlap: the longest matching includeSubdomains domain wins.
    @Test func testIncludeSubdomainsEnabledAndOverlap() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true),
                                 try Self.policy("www.good.com", [P.c], includesSubdomains: true)])
        #expect(P.check(store, "foo.www.good.com", try P.chain(P.c)) == .trusted)
        #expect(P.check(store, "foo.www.good.com", try P.chain(P.a)) == .untrusted)
        #expect(P.check(store, "foo.good.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "foo.good.com", try P.chain(P.c)) == .untrusted)
    }

    // testDomainTldAndParentFromServerConfigDoesNotCrash: the public suffix above a pinned domain
    // gets no policy.
    @Test func testDomainTldAndParentFromServerConfigDoesNotCrash() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true)])
        #expect(P.check(store, "com", try P.chain(P.b)) == .empty)
    }

    // MARK: - TSKPinningValidatorTests: what the pins decide

    /// [leaf, intermediate, root], as SecTrust builds it for TrustKit.
    static func fullChain() throws -> [Data] { try P.chain("localhost-chain", P.root) }

    // testVerifyAgainstAnyPublicKey
    @Test func testVerifyAgainstAnyPublicKey() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.a, P.intermediate, P.root], fakes: [])])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .trusted)
    }

    // testVerifyAgainstIntermediateCAPublicKey
    @Test func testVerifyAgainstIntermediateCAPublicKey() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.intermediate])])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .trusted)
    }

    // testVerifyAgainstCAPublicKey
    @Test func testVerifyAgainstCAPublicKey() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.root])])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .trusted)
    }

    // testVerifyAgainstLeafPublicKey / testVerifyAgainstLeafPublicKeyAndBadPublicKey
    @Test func testVerifyAgainstLeafPublicKeyAndBadPublicKey() throws {
        let store = try P.store([try Self.policy("www.good.com", [P.a])])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .trusted)
    }

    // testVerifyAgainstBadPublicKey
    @Test func testVerifyAgainstBadPublicKey() throws {
        let store = try P.store([P.anyKeyPolicy("www.good.com", [P.fake1, P.fake2])])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .untrusted)
    }

    // testVerifyAgainstInjectedCaPublicKey: a pinned CA certificate appended to an unrelated valid
    // chain is not part of the validated chain, and does not satisfy the pin.
    @Test func testVerifyAgainstInjectedCaPublicKey() throws {
        let store = try PinPolicyTests.store(policies: [try Self.policy("localhost", [P.otherIntermediate])])
        let presented = try P.chain("localhost-chain", P.otherIntermediate)
        let decision = PinningEvaluator(store: store, trustRoots: PinPolicyTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
            .evaluateNow(host: "localhost", presentedChain: presented, at: PinPolicyTests.now)
        #expect(decision.failure?.reason == .pinMismatch)
    }

    // testVerifyAgainstBadPublicKeyPinningNotEnforced: kTSKEnforcePinning = NO lets the
    // connection go on and reports the failure.
    @Test func testVerifyAgainstBadPublicKeyPinningNotEnforced() throws {
        var policy = P.anyKeyPolicy("localhost", [P.fake1, P.fake2])
        policy.reportOnly = true
        let decision = try PinPolicyTests.decide(try PinPolicyTests.store(policies: [policy]), "localhost-chain")
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure?.reason == .pinMismatch)
    }

    // testVerifyAgainstBadPublicKeyPinsExpired: TrustKit treats an expired policy as no policy and
    // leaves the host to the system (TSKTrustDecisionDomainNotPinned). PinStore fails closed: the
    // expired policy no longer applies and the unpinned host is refused.
    @Test func expiredPolicyFailsClosedUnlikeTrustKit() throws {
        let store = try P.store([P.anyKeyPolicy("www.good.com", [P.fake1, P.fake2], expiration: P.utcDay(2015, 1, 1))])
        #expect(P.check(store, "www.good.com", try Self.fullChain()) == .empty)
    }

    // TrustKit picks www.good.com's entry by name and then, the entry being expired, pins nothing
    // and leaves the host to the system. PinStore picks the same entry, takes no pins from the
    // parent either (that would widen trust the day the narrow pins lapse), and refuses the
    // host as unpinned.
    @Test func anExpiredSubdomainPolicyPinsNothingAndFailsClosedUnlikeTrustKit() throws {
        let store = try P.store([try Self.policy("good.com", [P.a], includesSubdomains: true),
                                 try Self.policy("www.good.com", [P.c], expiration: P.utcDay(2015, 1, 1))])
        #expect(P.check(store, "www.good.com", try P.chain(P.a)) == .empty)
        #expect(P.check(store, "www.good.com", try P.chain(P.c)) == .empty)
        #expect(P.check(store, "mail.good.com", try P.chain(P.a)) == .trusted)
    }

    // TrustKit applies only the most specific entry, so a report-only www.good.com lets its failures
    // through even under an enforcing good.com. PinStore: the narrower policy supplies the pins,
    // but a failure is enforced while any matching policy enforces.
    @Test func aReportOnlySubdomainPolicyDoesNotWeakenAnEnforcingParentUnlikeTrustKit() throws {
        var child = P.anyKeyPolicy("api.example.com", [P.fake1, P.fake2])
        child.reportOnly = true
        let parent = try Self.policy("example.com", [P.intermediate], includesSubdomains: true)
        let store = try PinPolicyTests.store(policies: [parent, child])
        let decision = try PinPolicyTests.decide(store, "api-example-chain", host: "api.example.com")
        #expect(decision.failure?.reason == .pinMismatch)
    }

    // The same pair with the report-only policy alone: its failure is only reported.
    @Test func aReportOnlyPolicyAloneReportsItsFailure() throws {
        var child = P.anyKeyPolicy("api.example.com", [P.fake1, P.fake2])
        child.reportOnly = true
        let decision = try PinPolicyTests.decide(try PinPolicyTests.store(policies: [child]), "api-example-chain", host: "api.example.com")
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure?.reason == .pinMismatch)
    }
}
