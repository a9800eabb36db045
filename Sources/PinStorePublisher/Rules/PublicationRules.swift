import Foundation
import PinStore

/// The rules before anything is published: a pure function of the state, the partners, the
/// numbers and one time, so every outcome is tested with an injected time and no network.
///
/// A presented certificate's pin is published automatically only when, in this order:
/// 1. its chain validated for the host (the probe's OpenSSL validation; never waived);
/// 2. it is neither expired nor expiring within `minimumRemainingValidity` (never waived);
/// 3. it was issued under an allowed CA: one of the CAs of certificates already published for
///    the partner, or one `allowedCAs` names. The first certificate ever seen for a partner
///    with no `allowedCAs` is staged: someone must say which CA the partner uses, once;
/// 4. where the partner requires it, it is CT-compliant under the configured log list;
/// 5. it was seen on at least K probes spanning at least T, so a transient interception seen
///    once never reaches the list.
/// An approval (a signature by a trusted or approver key over the staged change) waives 3-5.
/// With a threshold of 2 or more and `publishOnAgreement` (``Settings/agreementWindow``), rule 5
/// is replaced by agreement: a certificate meeting 1-4 that this vantage point's latest probe
/// saw presented goes into its plan at once, and since a list needs k signatures and each
/// vantage point signs only pins of its own plan, it reaches a list only when k vantage points
/// see it in the same round.
/// Everything else is staged with its reason, never published.
///
/// Withdrawal: a published pin stays while any address of the partner presents a certificate
/// that yields it (an address that stops answering keeps what it presented last); once none
/// does, its clock starts, and the pin goes only when the clock has run for `gracePeriod`. A
/// pin past its own `expires` goes at once (clients ignore it anyway). An announced key is
/// pinned until it is seen presented; once it has been and is no longer presented, its pin is
/// withdrawn the same way (it does not stay for the rest of `announcementLifetime`).
///
/// Bounded: at most ``maximumPinsPerPartner`` pins per partner, so that one partner cannot
/// grow the list past what clients accept for everyone.
package enum PublicationRules {
    /// The numbers the rules use (from the publication file).
    package struct Settings: Sendable {
        package var minimumSightings: Int
        package var minimumSpan: TimeInterval
        package var gracePeriod: TimeInterval
        package var minimumRemainingValidity: TimeInterval
        /// Agreement instead of waiting: how recently this vantage point must have seen a
        /// certificate for it to count as seen in this round; nil when rule 5 (K over T) holds.
        package var agreementWindow: TimeInterval?

        package init(minimumSightings: Int, minimumSpan: TimeInterval, gracePeriod: TimeInterval, minimumRemainingValidity: TimeInterval,
                     agreementWindow: TimeInterval? = nil) {
            self.minimumSightings = minimumSightings
            self.minimumSpan = minimumSpan
            self.gracePeriod = gracePeriod
            self.minimumRemainingValidity = minimumRemainingValidity
            self.agreementWindow = agreementWindow
        }

        /// The file's numbers; agreement replaces rule 5 only where `threshold` is 2 or more and
        /// the file does not turn `publishOnAgreement` off. A single publisher always waits,
        /// also one holding several keys (`signers`): its own signatures are one view, not k.
        package init(_ file: PublicationFile, threshold: Int = 1, signers: Int = 1) {
            let agreement = threshold >= 2 && signers == 1 && file.vantagePoint != nil && (file.publishOnAgreement ?? true)
            self.init(minimumSightings: file.minimumSightings, minimumSpan: file.minimumSpan.seconds,
                      gracePeriod: file.gracePeriod.seconds, minimumRemainingValidity: file.minimumRemainingValidity.seconds,
                      agreementWindow: agreement ? file.probeInterval.seconds + 60 : nil)
        }
    }

    /// A partner as the rules see it: its file entry and the CAs the file allows (SPKI
    /// SHA-256 Base64, PEM files already read).
    package struct Partner: Sendable {
        package var entry: PublicationFile.Partner
        package var allowedCAs: Set<String>

        package init(entry: PublicationFile.Partner, allowedCAs: Set<String> = []) {
            self.entry = entry
            self.allowedCAs = allowedCAs
        }
    }

    /// The ID a staged change of `partnerID`'s leaf has: the first 12 hex digits of SHA-256
    /// over `partnerID` and the leaf's hash (stable across probes and restarts).
    package static func changeID(partnerID: String, leafSHA256: String) -> String {
        String(StateFile.hex(SHA256Digest.hash(Data("\(partnerID)\n\(leafSHA256)".utf8))).prefix(12))
    }

    /// What an approver signs: the change, its partner, the exact leaf and the pin it adds,
    /// under a label no list or key document starts with (so the signature means nothing else).
    package static func approvalMessage(changeID: String, partnerID: String, leafSHA256: String,
                                        kind: PublicationFile.PinKind, pin: String) -> Data {
        Data("pinstore-publisher-approval\n\(changeID)\n\(partnerID)\n\(leafSHA256)\n\(kind.rawValue)\n\(pin)\n".utf8)
    }

    /// The outcome for one certificate of one partner.
    package static func outcome(of certificate: PublisherState.SeenCertificate, partner: Partner, record: PublisherState.PartnerRecord,
                                settings: Settings, approvedBy approver: String?, now: Date) -> RuleOutcome {
        if let failure = certificate.validationFailure {
            return .chainDidNotValidate(failure)
        }
        if certificate.notAfter.timeIntervalSince(now) < settings.minimumRemainingValidity {
            return .expiresTooSoon(notAfter: certificate.notAfter)
        }
        if let approver { return .approved(keyID: approver) }
        let allowed = partner.allowedCAs.union(record.trustedCAs)
        if allowed.isEmpty { return .firstCertificate }
        if allowed.isDisjoint(with: certificate.caSPKIs) {
            return .caNotAllowed(issuer: certificate.caSPKIs.first.map { "the CA with SPKI SHA-256 \($0)" } ?? "an unknown CA")
        }
        if partner.entry.requireCertificateTransparency {
            guard let verdict = certificate.certificateTransparency else {
                return .notCTCompliant("not checked: no log list was configured when it was seen")
            }
            guard verdict.compliant else { return .notCTCompliant(verdict.detail) }
        }
        if let window = settings.agreementWindow, now.timeIntervalSince(certificate.lastSeen) <= window,
           certificate.sightings < settings.minimumSightings || certificate.lastSeen.timeIntervalSince(certificate.firstSeen) < settings.minimumSpan {
            return .seenNowByAgreement
        }
        if certificate.sightings < settings.minimumSightings {
            return .tooFewSightings(seen: certificate.sightings, needed: settings.minimumSightings)
        }
        let span = certificate.lastSeen.timeIntervalSince(certificate.firstSeen)
        if span < settings.minimumSpan {
            return .spanTooShort(span: span, needed: settings.minimumSpan)
        }
        return .rulesMet
    }

    /// The most pins one partner may have in the list. An honest partner needs one per
    /// certificate it presents at once plus the ones in their grace period; a partner that
    /// rotates a new certificate through K sightings again and again would otherwise grow the
    /// list (and the state) for `gracePeriod` after each, until clients refuse the list for
    /// everyone. Past it, pins presented now come first, then announced ones, then those in
    /// their grace period (the most recently presented first); a new certificate that does not
    /// fit is staged (``RuleOutcome/tooManyPins(limit:)``), a pin in its grace period that does
    /// not fit is withdrawn early.
    package static let maximumPinsPerPartner = 32

    /// The plan at `now`.
    ///
    /// - Parameter approvals: verified approvals: change ID to the approving key's ID.
    package static func plan(state: PublisherState, partners: [Partner], settings: Settings,
                             approvals: [String: String], now: Date) -> PublicationPlan {
        var pins: [String: PublisherState.PublishedPin] = [:]
        var staged: [StagedChange] = []
        var withdrawn: [PublisherState.PublishedPin] = []
        var cases: [String: RotationCase] = [:]
        var trustedCAs: [String: Set<String>] = [:]
        var retiring = Set<PublicationPlan.AnnouncedKey>()
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))

        for partner in partners {
            let id = partner.entry.id
            let record = state.partners[id] ?? PublisherState.PartnerRecord()
            let servedLeaves = record.servedLeaves
            let served = servedLeaves.compactMap { record.certificates[$0] }
            let published = state.publishedPins.filter { $0.partnerID == id }
            let publishedValues = Set(published.filter { $0.kind == partner.entry.pin }.map(\.value))
            /// This partner's pins by entry key, and the certificates behind the new ones.
            var own: [String: PublisherState.PublishedPin] = [:]
            var newlyPublished: [String: (certificate: PublisherState.SeenCertificate, change: String)] = [:]

            // New certificates: the ones presented now.
            for certificate in served.sorted(by: { $0.leafSHA256 < $1.leafSHA256 }) {
                let change = changeID(partnerID: id, leafSHA256: certificate.leafSHA256)
                let result = outcome(of: certificate, partner: partner, record: record, settings: settings,
                                     approvedBy: approvals[change], now: now)
                let pin = certificate.pin(partner.entry.pin)
                if result.publishes, let pin {
                    let expires = Int64(pin.expires.timeIntervalSince1970.rounded(.down))
                    let made = PublisherState.PublishedPin(partnerID: id, name: partner.entry.host, kind: partner.entry.pin, value: pin.value,
                                                           expires: expires, source: result == .rulesMet ? "observed" : result == .seenNowByAgreement ? "agreement" : "approved",
                                                           notServedSince: nil)
                    merge(made, into: &own)
                    if !publishedValues.contains(pin.value), newlyPublished[made.entryKey] == nil {
                        newlyPublished[made.entryKey] = (certificate, change)
                    }
                    trustedCAs[id, default: []].formUnion(certificate.caSPKIs)
                } else if !result.publishes {
                    staged.append(StagedChange(id: change, partnerID: id, host: partner.entry.host, leafSHA256: certificate.leafSHA256,
                                               kind: partner.entry.pin, pin: pin?.value, subject: certificate.subject,
                                               notAfter: certificate.notAfter, outcome: result,
                                               pinAlreadyPublished: pin.map { publishedValues.contains($0.value) } ?? false))
                }
            }
            // Refused leaves presented now (kept as digests: they can never be published).
            for refused in record.refusedLeaves where servedLeaves.contains(refused.leafSHA256) && record.certificates[refused.leafSHA256] == nil {
                let result: RuleOutcome = refused.outcome == RuleOutcome.expiresTooSoon(notAfter: refused.notAfter).code
                    ? .expiresTooSoon(notAfter: refused.notAfter) : .chainDidNotValidate(refused.detail)
                staged.append(StagedChange(id: changeID(partnerID: id, leafSHA256: refused.leafSHA256), partnerID: id, host: partner.entry.host,
                                           leafSHA256: refused.leafSHA256, kind: partner.entry.pin, pin: nil, subject: refused.subject,
                                           notAfter: refused.notAfter, outcome: result, pinAlreadyPublished: false))
            }

            // Announced keys: pinned until the key is seen presented, then while it is presented;
            // once a deployed key is no longer presented, its pin is withdrawn like any other
            // (below, after gracePeriod). At the latest until the announcement's own expiry.
            let presentedKeys = Set(served.map(\.spkiSHA256))
            let announced = state.announcements.filter { $0.partnerID == id && $0.isLive(at: now) }
            for announcement in announced {
                guard announcement.firstPresented == nil || presentedKeys.contains(announcement.spkiSHA256) else {
                    retiring.insert(.init(partnerID: id, spkiSHA256: announcement.spkiSHA256))
                    continue
                }
                merge(PublisherState.PublishedPin(partnerID: id, name: partner.entry.host, kind: .leafKey, value: announcement.spkiSHA256,
                                                  expires: Int64(announcement.expires.timeIntervalSince1970.rounded(.down)),
                                                  source: "announced", notServedSince: nil), into: &own)
            }

            // Pins already in the list: kept while presented, then for the grace period.
            for var pin in published {
                guard pin.expires > nowSeconds else {
                    withdrawn.append(pin)
                    continue
                }
                if own[pin.entryKey] != nil { continue }
                let stillServed = served.contains { $0.pin(pin.kind)?.value == pin.value }
                if stillServed {
                    pin.notServedSince = nil
                } else if pin.source == "agreement" {
                    // Published on agreement, before K sightings over T, and no longer presented:
                    // it may have been a short interception seen from k paths; no grace period.
                    withdrawn.append(pin)
                    continue
                } else {
                    let since = pin.notServedSince ?? now
                    guard now.timeIntervalSince(since) < settings.gracePeriod else {
                        withdrawn.append(pin)
                        continue
                    }
                    pin.notServedSince = since
                }
                own[pin.entryKey] = pin
            }

            // At most maximumPinsPerPartner: what does not fit is staged (new) or withdrawn (old).
            let (kept, overflow) = capped(Array(own.values), publishedKeys: Set(published.map(\.entryKey)))
            for pin in overflow {
                if let new = newlyPublished[pin.entryKey] {
                    staged.append(StagedChange(id: new.change, partnerID: id, host: partner.entry.host, leafSHA256: new.certificate.leafSHA256,
                                               kind: pin.kind, pin: pin.value, subject: new.certificate.subject,
                                               notAfter: new.certificate.notAfter, outcome: .tooManyPins(limit: maximumPinsPerPartner),
                                               pinAlreadyPublished: false))
                } else if published.contains(where: { $0.entryKey == pin.entryKey }) {
                    withdrawn.append(pin)
                }
            }
            for pin in kept { merge(pin, into: &pins) }

            let pending = announced.contains { $0.firstPresented == nil }
            cases[id] = rotationCase(partner: partner, pins: kept, served: served, announced: pending)
        }

        // Pins of partners no longer in the file are withdrawn after the grace period too.
        let known = Set(partners.map(\.entry.id))
        for var pin in state.publishedPins where !known.contains(pin.partnerID) {
            let since = pin.notServedSince ?? now
            if pin.expires <= nowSeconds || now.timeIntervalSince(since) >= settings.gracePeriod {
                withdrawn.append(pin)
            } else {
                pin.notServedSince = since
                merge(pin, into: &pins)
            }
        }

        let sorted = pins.values.sorted { ($0.name, $0.kind.rawValue, $0.value) < ($1.name, $1.kind.rawValue, $1.value) }
        return PublicationPlan(pins: sorted, staged: staged, withdrawn: withdrawn, cases: cases, trustedCAs: trustedCAs,
                               retiringAnnouncements: retiring, madeAt: now)
    }

    /// Adds `pin` to `pins`; the same entry twice keeps the later `expires` and is live when
    /// either is (a withdrawal clock runs only while no source keeps the pin presented).
    static func merge(_ pin: PublisherState.PublishedPin, into pins: inout [String: PublisherState.PublishedPin]) {
        guard var existing = pins[pin.entryKey] else {
            pins[pin.entryKey] = pin
            return
        }
        existing.expires = max(existing.expires, pin.expires)
        if let mine = existing.notServedSince, let theirs = pin.notServedSince {
            existing.notServedSince = max(mine, theirs)
        } else {
            existing.notServedSince = nil
        }
        pins[pin.entryKey] = existing
    }

    /// One partner's pins cut to ``maximumPinsPerPartner``: presented now first (those already
    /// in the list before new ones, announced ones last among them), then those in their grace
    /// period, the most recently presented first; ties by value, so every vantage point cuts alike.
    static func capped(_ pins: [PublisherState.PublishedPin], publishedKeys: Set<String>)
        -> (kept: [PublisherState.PublishedPin], overflow: [PublisherState.PublishedPin]) {
        guard pins.count > maximumPinsPerPartner else { return (pins, []) }
        func rank(_ pin: PublisherState.PublishedPin) -> Int {
            guard pin.notServedSince == nil else { return 3 }
            if pin.source == "announced" { return 2 }
            return publishedKeys.contains(pin.entryKey) ? 0 : 1
        }
        let ordered = pins.sorted { left, right in
            let (a, b) = (rank(left), rank(right))
            if a != b { return a < b }
            if let l = left.notServedSince, let r = right.notServedSince, l != r { return l > r }
            return (left.value, left.kind.rawValue) < (right.value, right.kind.rawValue)
        }
        return (Array(ordered.prefix(maximumPinsPerPartner)), Array(ordered.dropFirst(maximumPinsPerPartner)))
    }

    /// Which promise the publisher can make for a partner.
    static func rotationCase(partner: Partner, pins: [PublisherState.PublishedPin], served: [PublisherState.SeenCertificate],
                             announced: Bool) -> RotationCase {
        if partner.entry.pin == .issuerKey { return .pinnedByCAKey }
        if announced { return .announcedRotation }
        // A pin that no address presents yet, or a second one presented next to the first:
        // the next certificate is pinned before the cutover.
        let presented = Set(served.compactMap { $0.pin(partner.entry.pin)?.value })
        let live = pins.filter { $0.notServedSince == nil }
        if live.count > 1, live.contains(where: { !presented.contains($0.value) }) || presented.count > 1 {
            return .announcedRotation
        }
        return .unannouncedLeafRotation
    }
}
