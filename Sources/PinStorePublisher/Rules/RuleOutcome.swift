import Foundation

/// Why a certificate a partner presented is, or is not, published: one typed, explained
/// outcome per certificate per plan.
package enum RuleOutcome: Sendable, Hashable, CustomStringConvertible {
    // Published.
    /// Every rule is met.
    case rulesMet
    /// A person (or another trusted key) approved it; the CA, CT and K/T rules are waived.
    case approved(keyID: String)
    /// Rules 1 to 4 are met and this vantage point's latest probe saw it presented, but not yet
    /// K times over T: with a threshold k of 2 or more and `publishOnAgreement`, it goes into this
    /// vantage point's plan, and so reaches a list only once k vantage points each see it in
    /// the same round (multi-perspective validation instead of waiting).
    case seenNowByAgreement

    // Waiting: published by itself once it is seen more (no person needed).
    /// Seen on fewer than K probes.
    case tooFewSightings(seen: Int, needed: Int)
    /// Seen K times, but over less than T.
    case spanTooShort(span: TimeInterval, needed: TimeInterval)

    // Staged for a person.
    /// The presented chain did not validate for the host.
    case chainDidNotValidate(String)
    /// Expired, or expiring within `minimumRemainingValidity`.
    case expiresTooSoon(notAfter: Date)
    /// The first certificate ever seen for this partner, and the file lists no CA for it.
    case firstCertificate
    /// Issued under none of the CAs allowed for the partner.
    case caNotAllowed(issuer: String)
    /// CT is required and the certificate is not compliant (or was not checked).
    case notCTCompliant(String)
    /// Every other rule is met, but the partner already has
    /// ``PublicationRules/maximumPinsPerPartner`` pins in the list; published by itself once
    /// older pins are withdrawn. An approval does not waive it.
    case tooManyPins(limit: Int)

    /// Whether the certificate's pin goes into the list.
    package var publishes: Bool {
        switch self {
        case .rulesMet, .approved, .seenNowByAgreement: return true
        default: return false
        }
    }

    /// Whether it will be published by itself once seen enough (no person needed).
    package var isWaiting: Bool {
        switch self {
        case .tooFewSightings, .spanTooShort: return true
        default: return false
        }
    }

    /// A stable name for logs and metrics.
    package var code: String {
        switch self {
        case .rulesMet: return "rulesMet"
        case .approved: return "approved"
        case .seenNowByAgreement: return "seenNowByAgreement"
        case .tooFewSightings: return "tooFewSightings"
        case .spanTooShort: return "spanTooShort"
        case .chainDidNotValidate: return "chainDidNotValidate"
        case .expiresTooSoon: return "expiresTooSoon"
        case .firstCertificate: return "firstCertificate"
        case .caNotAllowed: return "caNotAllowed"
        case .notCTCompliant: return "notCTCompliant"
        case .tooManyPins: return "tooManyPins"
        }
    }

    package var description: String {
        switch self {
        case .rulesMet:
            return "every rule is met"
        case .approved(let keyID):
            return "approved by key \(keyID.prefix(16))"
        case .seenNowByAgreement:
            return "rules 1 to 4 met and presented at this vantage point's latest probe; published once threshold vantage points see it in the same round"
        case .tooFewSightings(let seen, let needed):
            return "seen on \(seen) of the \(needed) probes needed; published by itself if it is still presented"
        case .spanTooShort(let span, let needed):
            return "seen over \(Int(span)) s of the \(Int(needed)) s needed; published by itself if it is still presented"
        case .chainDidNotValidate(let why):
            return "the chain does not validate for the host (\(why)); fix the partner's anchors, or the partner's server"
        case .expiresTooSoon(let notAfter):
            return "the certificate expires at \(notAfter), within minimumRemainingValidity; not worth pinning"
        case .firstCertificate:
            return "the first certificate seen for this partner, and allowedCAs names none of its CAs; approve it (or list its CA) to start"
        case .caNotAllowed(let issuer):
            return "issued by \(issuer), under none of the CAs already published for this partner or listed in allowedCAs; approve it if the partner changed CA, else it may be an interception"
        case .notCTCompliant(let why):
            return "not CT-compliant under the configured log list (\(why)); the partner requires CT"
        case .tooManyPins(let limit):
            return "the partner already has \(limit) pins in the list, the most one partner may have; published once older pins are withdrawn (a partner presenting this many certificates at once, or rotating this fast, should be looked at)"
        }
    }
}
