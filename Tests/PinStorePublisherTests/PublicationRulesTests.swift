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
        let json = #"{"partners": [], "signingKeys": [{"file": "k.pem"}], "outputFolder": "o", "stateFolder": "s", "vantagePoint": {"name": "a"}}"#
        let file = try PublicationFile(json: Data(json.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"))
        #expect(PublicationRules.Settings(file, threshold: 1).agreementWindow == nil)
        #expect(PublicationRules.Settings(file, threshold: 2).agreementWindow != nil)
        var off = file
        off.publishOnAgreement = false
        #expect(PublicationRules.Settings(off, threshold: 2).agreementWindow == nil)
        // One publisher holding the threshold's keys itself, or with no vantagePoint, is one view.
        #expect(PublicationRules.Settings(file, threshold: 2, signers: 2).agreementWindow == nil)
        var alone = file
        alone.vantagePoint = nil
        #expect(PublicationRules.Settings(alone, threshold: 2).agreementWindow == nil)
    }

    @Test func aPinPublishedOnAgreementIsWithdrawnAtOnceWhenNoLongerPresented() {
        var state = PublisherState()
        state.partners["api"] = PublisherState.PartnerRecord()
        state.publishedPins = [.init(partnerID: "api", name: "api.example", kind: .leafCertificate, value: "SEEN-ONCE",
                                     expires: Int64(Self.now.timeIntervalSince1970) + 1_000_000, source: "agreement", notServedSince: nil)]
        let plan = PublicationRules.plan(state: state, partners: [PublicationRulesTests.partner], settings: Self.agreeing, approvals: [:], now: Self.now)
        #expect(plan.pins.isEmpty)
        #expect(plan.withdrawn.map(\.value) == ["SEEN-ONCE"])
    }
}

@Suite struct PublicationRulesBoundsTests {
    typealias Rules = PublicationRulesTests

    /// A partner presenting `count` certificates at once that meet every rule; `published`
    /// of them are in the list already.
    static func state(presenting count: Int, published: Range<Int>) -> PublisherState {
        var state = PublisherState()
        var record = PublisherState.PartnerRecord()
        for index in 0..<count {
            var certificate = Rules.certificate()
            certificate.leafSHA256 = String(format: "LEAF%03d", index)
            record.certificates[certificate.leafSHA256] = certificate
            record.addresses["10.0.0.\(index):443"] = .init(lastObserved: Rules.now, leafSHA256: certificate.leafSHA256)
        }
        state.partners["api"] = record
        state.publishedPins = published.map { index in
            .init(partnerID: "api", name: "api.example", kind: .leafCertificate, value: String(format: "LEAF%03d", index),
                  expires: Int64(Rules.now.timeIntervalSince1970) + 1_000_000, source: "observed", notServedSince: nil)
        }
        return state
    }

    @Test func aPartnerHasAtMostTheMaximumPinsAndThoseAlreadyPublishedStay() {
        let limit = PublicationRules.maximumPinsPerPartner
        // The published ones sort last by value: they stay because they are published.
        let published = 8..<(8 + limit)
        let plan = PublicationRules.plan(state: Self.state(presenting: limit + 8, published: published), partners: [Rules.partner],
                                         settings: Rules.settings, approvals: [:], now: Rules.now)
        #expect(plan.pins.count == limit)
        #expect(Set(plan.pins.map(\.value)) == Set(published.map { String(format: "LEAF%03d", $0) }))
        #expect(plan.staged.map(\.outcome) == Array(repeating: .tooManyPins(limit: limit), count: 8))
        #expect(plan.staged.allSatisfy { $0.needsPerson })
        #expect(plan.withdrawn.isEmpty)
    }

    @Test func aPinInItsGracePeriodMakesRoomForOnesPresentedNow() {
        let limit = PublicationRules.maximumPinsPerPartner
        var state = Self.state(presenting: limit, published: 0..<limit)
        state.publishedPins.append(.init(partnerID: "api", name: "api.example", kind: .leafCertificate, value: "GONE",
                                         expires: Int64(Rules.now.timeIntervalSince1970) + 1_000_000, source: "observed",
                                         notServedSince: Rules.now - 60))
        let plan = PublicationRules.plan(state: state, partners: [Rules.partner], settings: Rules.settings, approvals: [:], now: Rules.now)
        #expect(plan.pins.count == limit)
        #expect(plan.withdrawn.map(\.value) == ["GONE"])
        #expect(plan.staged.isEmpty)
    }

    /// An announced key that was deployed, seen and retired: not pinned again by its
    /// announcement, so the pin it has in the list follows the normal withdrawal.
    @Test func aRetiredAnnouncedKeyFollowsTheNormalWithdrawal() {
        var state = PublisherState()
        var record = PublisherState.PartnerRecord()
        var current = Rules.certificate()
        current.leafSHA256 = "NEXT-NEXT"
        current.spkiSHA256 = "THIRD-KEY"
        record.certificates["NEXT-NEXT"] = current
        record.addresses["a"] = .init(lastObserved: Rules.now, leafSHA256: "NEXT-NEXT")
        state.partners["api"] = record
        let lifetime = Rules.now + 80 * 86_400
        state.announcements = [
            .init(partnerID: "api", spkiSHA256: "RETIRED-KEY", announcedAt: Rules.now - 30 * 86_400, expires: lifetime,
                  firstPresented: Rules.now - 20 * 86_400),
            .init(partnerID: "api", spkiSHA256: "UNDEPLOYED-KEY", announcedAt: Rules.now - 30 * 86_400, expires: lifetime),
        ]
        func pin(_ value: String, notServedSince: Date?) -> PublisherState.PublishedPin {
            .init(partnerID: "api", name: "api.example", kind: .leafKey, value: value, expires: Int64(lifetime.timeIntervalSince1970),
                  source: "announced", notServedSince: notServedSince)
        }
        func plan(retiredSince: Date?, at now: Date) -> PublicationPlan {
            var state = state
            state.publishedPins = [pin("RETIRED-KEY", notServedSince: retiredSince), pin("UNDEPLOYED-KEY", notServedSince: nil)]
            return PublicationRules.plan(state: state, partners: [Rules.partner], settings: Rules.settings, approvals: [:], now: now)
        }
        // Just retired: its withdrawal clock starts; the undeployed one stays pinned.
        let first = plan(retiredSince: nil, at: Rules.now)
        #expect(first.pins.first { $0.value == "RETIRED-KEY" }?.notServedSince == Rules.now)
        #expect(first.pins.first { $0.value == "UNDEPLOYED-KEY" }?.notServedSince == nil)
        #expect(first.retiringAnnouncements == [.init(partnerID: "api", spkiSHA256: "RETIRED-KEY")])
        // A grace period later it is withdrawn, 70 days before its announcement would expire.
        let later = plan(retiredSince: Rules.now, at: Rules.now + Rules.settings.gracePeriod)
        #expect(later.withdrawn.map(\.value) == ["RETIRED-KEY"])
        #expect(later.pins.map(\.value).contains("UNDEPLOYED-KEY"))
        // Adopting that list ends the retired announcement; the undeployed one counts on.
        var adopted = state
        adopted.adopt(later)
        #expect(adopted.announcements.map(\.ended) == [Rules.now + Rules.settings.gracePeriod, nil])
    }
}
