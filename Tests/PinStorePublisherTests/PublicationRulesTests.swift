import Foundation
import Testing
import PinStore
@testable import PinStorePublisher

@Suite struct PublicationRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let settings = PublicationRules.Settings(minimumSightings: 3, minimumSpan: 1_200, gracePeriod: 86_400, minimumRemainingValidity: 86_400)
    static let partner = PublicationRules.Partner(entry: .init(id: "api", host: "api.example"), allowedCAs: ["CA"])

    static func certificate(sightings: Int = 3, span: TimeInterval = 1_200, cas: [String] = ["CA"], notAfter: TimeInterval = 30 * 86_400,
                            ct: PublisherState.CTVerdict? = nil, failure: String? = nil) -> PublisherState.SeenCertificate {
        PublisherState.SeenCertificate(leafSHA256: "LEAF", spkiSHA256: "SPKI", issuerSPKISHA256: cas.first, issuerNotAfter: nil, caSPKIs: cas,
                                       subject: "CN=api", notBefore: now - 86_400, notAfter: now + notAfter, firstSeen: now - span, lastSeen: now,
                                       sightings: sightings, addresses: ["a"], certificateTransparency: ct, validationFailure: failure)
    }

    static func outcome(_ certificate: PublisherState.SeenCertificate, partner: PublicationRules.Partner = partner, approved: String? = nil) -> RuleOutcome {
        PublicationRules.outcome(of: certificate, partner: partner, record: .init(), settings: settings, approvedBy: approved, now: now)
    }

    @Test func aCertificateMeetingEveryRuleIsPublished() {
        #expect(Self.outcome(Self.certificate()) == .rulesMet)
    }

    @Test func fewerThanKSightingsWait() {
        #expect(Self.outcome(Self.certificate(sightings: 1)) == .tooFewSightings(seen: 1, needed: 3))
    }

    @Test func kSightingsOverLessThanTWait() {
        #expect(Self.outcome(Self.certificate(span: 600)).code == "spanTooShort")
    }

    @Test func aCertificateFromAnotherCAIsStaged() {
        let outcome = Self.outcome(Self.certificate(cas: ["OTHER"]))
        #expect(outcome.code == "caNotAllowed")
        #expect(!outcome.isWaiting)
    }

    @Test func theFirstCertificateOfAPartnerWithNoListedCAIsStaged() {
        let bare = PublicationRules.Partner(entry: .init(id: "api", host: "api.example"))
        #expect(Self.outcome(Self.certificate(), partner: bare) == .firstCertificate)
    }

    @Test func aNonCompliantCertificateIsStagedWhereCTIsRequired() {
        let strict = PublicationRules.Partner(entry: .init(id: "api", host: "api.example", requireCertificateTransparency: true), allowedCAs: ["CA"])
        #expect(Self.outcome(Self.certificate(ct: .init(compliant: false, detail: "no SCT")), partner: strict).code == "notCTCompliant")
        #expect(Self.outcome(Self.certificate(ct: .init(compliant: true, detail: "ok")), partner: strict) == .rulesMet)
    }

    @Test func aCertificateExpiringWithinTheMinimumIsStaged() {
        #expect(Self.outcome(Self.certificate(notAfter: 3_600)).code == "expiresTooSoon")
    }

    @Test func aChainThatDidNotValidateIsStagedEvenWhenApproved() {
        #expect(Self.outcome(Self.certificate(failure: "bad"), approved: "key").code == "chainDidNotValidate")
    }

    @Test func anApprovalWaivesTheCAAndSightingRules() {
        #expect(Self.outcome(Self.certificate(sightings: 1, cas: ["OTHER"]), approved: "key") == .approved(keyID: "key"))
    }

    static func state(servedLeaf: String?, notServedSince: Date?) -> PublisherState {
        var state = PublisherState()
        var record = PublisherState.PartnerRecord()
        var old = certificate()
        old.leafSHA256 = "OLD"
        record.certificates["OLD"] = old
        if let servedLeaf { record.addresses["a"] = .init(lastObserved: now, leafSHA256: servedLeaf) }
        state.partners["api"] = record
        state.publishedPins = [.init(partnerID: "api", name: "api.example", kind: .leafCertificate, value: "OLD", expires: Int64(now.timeIntervalSince1970) + 1_000_000,
                                     source: "observed", notServedSince: notServedSince)]
        return state
    }

    @Test func aPublishedPinIsKeptWhileServedPastTheGracePeriod() {
        let plan = PublicationRules.plan(state: Self.state(servedLeaf: "OLD", notServedSince: Self.now - 10 * 86_400), partners: [Self.partner],
                                         settings: Self.settings, approvals: [:], now: Self.now)
        #expect(plan.pins.map(\.value) == ["OLD"])
        #expect(plan.pins[0].notServedSince == nil)
    }

    @Test func aPinNoLongerServedIsKeptDuringTheGracePeriod() {
        let plan = PublicationRules.plan(state: Self.state(servedLeaf: nil, notServedSince: Self.now - 3_600), partners: [Self.partner],
                                         settings: Self.settings, approvals: [:], now: Self.now)
        #expect(plan.pins.map(\.value) == ["OLD"])
        #expect(plan.withdrawn.isEmpty)
    }

    @Test func aPinNoLongerServedIsWithdrawnAfterTheGracePeriod() {
        let plan = PublicationRules.plan(state: Self.state(servedLeaf: nil, notServedSince: Self.now - 86_401), partners: [Self.partner],
                                         settings: Self.settings, approvals: [:], now: Self.now)
        #expect(plan.pins.isEmpty)
        #expect(plan.withdrawn.map(\.value) == ["OLD"])
    }
}

/// Agreement instead of waiting (`publishOnAgreement`, threshold 2 or more).
@Suite struct AgreementRuleTests {
    static let now = PublicationRulesTests.now
    static let agreeing = PublicationRules.Settings(minimumSightings: 3, minimumSpan: 1_200, gracePeriod: 86_400, minimumRemainingValidity: 86_400,
                                                    agreementWindow: 660)

    static func outcome(_ certificate: PublisherState.SeenCertificate, settings: PublicationRules.Settings = agreeing) -> RuleOutcome {
        PublicationRules.outcome(of: certificate, partner: PublicationRulesTests.partner, record: .init(), settings: settings, approvedBy: nil, now: now)
    }

    @Test func aCertificateSeenOnceNowMeetingRulesOneToFourIsPlanned() {
        let outcome = Self.outcome(PublicationRulesTests.certificate(sightings: 1, span: 0))
        #expect(outcome == .seenNowByAgreement)
        #expect(outcome.publishes)
    }

    @Test func aCertificateNotSeenByTheLatestProbeIsNotPlannedByAgreement() {
        var certificate = PublicationRulesTests.certificate(sightings: 1, span: 0)
        certificate.lastSeen = Self.now - 3_600
        certificate.firstSeen = certificate.lastSeen
        #expect(Self.outcome(certificate).code == "tooFewSightings")
    }

    @Test func agreementWaivesNeitherTheCARuleNorCT() {
        #expect(Self.outcome(PublicationRulesTests.certificate(sightings: 1, span: 0, cas: ["OTHER"])).code == "caNotAllowed")
        let partner = PublicationRules.Partner(entry: .init(id: "api", host: "api.example", requireCertificateTransparency: true), allowedCAs: ["CA"])
        let outcome = PublicationRules.outcome(of: PublicationRulesTests.certificate(sightings: 1, span: 0), partner: partner, record: .init(),
                                               settings: Self.agreeing, approvedBy: nil, now: Self.now)
        #expect(outcome.code == "notCTCompliant")
    }

    @Test func aSinglePublisherAlwaysWaitsForKSightingsOverT() throws {
        let file = try PublicationFile(json: Data(#"{"partners": [], "signingKeys": [{"file": "k.pem"}], "outputFolder": "o", "stateFolder": "s"}"#.utf8),
                                       baseDirectory: URL(fileURLWithPath: "/tmp"))
        #expect(PublicationRules.Settings(file, threshold: 1).agreementWindow == nil)
        #expect(PublicationRules.Settings(file, threshold: 2).agreementWindow != nil)
        var off = file
        off.publishOnAgreement = false
        #expect(PublicationRules.Settings(off, threshold: 2).agreementWindow == nil)
    }
}
