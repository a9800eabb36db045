import Foundation
import PinStore
import PinStoreSigning

/// Whether an honest vantage point signs a proposal: only when the body is, byte for byte, a
/// list it would produce itself from its own observations, its own publication file and its
/// own list in force. A pure function of the proposal and this vantage point's view, so every
/// refusal is tested with no medium, no network and an injected time.
///
/// The body is rebuilt, not compared member by member: the proposal's entries (with the
/// per-entry signatures they carry, which must verify with a list key), its version, timestamp
/// and expiry, and this vantage point's own CT section, revocations and crl section go through
/// the same writer that made this vantage point's own proposals, and the result must equal the
/// body. So any section another vantage point changed (CT logs, a partner's CT requirement, a
/// revocation, a CRL mode, a member clients would read) is refused without a rule of its own.
package enum ProposalReview {
    /// What a vantage point knows when it reviews a proposal.
    package struct View: Sendable {
        /// One above this vantage point's own list in force: the only version it signs.
        package var version: Int64
        /// The timestamp of its list in force (a list's timestamp never goes back).
        package var lastTimestamp: Int64?
        /// Its own plan now.
        package var plan: PublicationPlan
        /// The keys clients trust for lists (per-entry signatures must verify with one).
        package var trustedKeys: [P256PublicKey]
        /// The publication file's `approverKeys` only: a list key never approves for a co-signer.
        package var approverKeys: [P256PublicKey]
        package var certificateTransparencySection: Data?
        package var revocations: [ListRevocations.Wire]
        package var crl: CRLHostList.Wire?
        /// The publication file's `expires`.
        package var listLifetime: TimeInterval
        /// How old a proposal's timestamp may be (`proposalTimeout`).
        package var freshness: TimeInterval
        /// The publication file's `gracePeriod`, and how far another vantage point's withdrawal
        /// clock may run behind this one's (a probe interval and a minute).
        package var gracePeriod: TimeInterval = 14 * 86_400
        package var withdrawalTolerance: TimeInterval = 660
        package var now: Date
    }

    /// The most approvals a proposal may carry (each costs a signature check).
    package static let maximumApprovals = 64

    /// How far a proposer's clock may run ahead of this vantage point's.
    package static let clockSkew: TimeInterval = 300

    /// Why `proposal` must not be signed, or nil when the body is one this vantage point would
    /// produce itself.
    package static func problem(with proposal: Proposal, view: View) -> String? {
        guard let body = proposal.bodyBytes else { return "the body is not Base64" }
        let parsed: ListReadBack.List
        let members: Members
        do {
            parsed = try ListReadBack.parse(body)
            members = try JSONDecoder().decode(Members.self, from: body)
        } catch {
            return "the body is not a list clients accept: \(error)"
        }
        guard members.version == view.version else {
            return "the body's version \(members.version.map(String.init) ?? "none") is not \(view.version), one above the list in force"
        }
        let now = view.now.timeIntervalSince1970
        guard let timestamp = parsed.timestamp ?? members.timestamp else { return "the body has no timestamp" }
        if let last = view.lastTimestamp, timestamp < last { return "the body's timestamp is older than the list in force's" }
        guard Double(timestamp) <= now + clockSkew else { return "the body's timestamp is in the future" }
        guard Double(timestamp) >= now - view.freshness else { return "the body's timestamp is older than proposalTimeout" }
        guard let expires = members.expires else { return "the body has no expires" }
        guard Double(expires) <= now + view.listLifetime + clockSkew else { return "the list would live longer than \"expires\" allows" }
        guard Double(expires) >= now + view.listLifetime - view.freshness else { return "the list would expire sooner than \"expires\" asks" }

        guard proposal.approvals.count <= maximumApprovals else {
            return "it carries \(proposal.approvals.count) approvals, more than \(maximumApprovals)"
        }
        // Every entry is one this vantage point's own plan publishes (or, for a few minutes, one
        // it has just withdrawn: withdrawal clocks differ by a probe), or one an approver key
        // approved for a change it staged itself.
        let acceptable = acceptableExpiries(proposal, view: view)
        var seen = Set<String>()
        for item in parsed.entries {
            let entry = item.entry
            guard entry.depth == 0 else { return "entry \(entry.name) has a depth; this vantage point pins depth 0 only" }
            guard seen.insert(entry.entryKey).inserted else { return "entry \(entry.entryKey) appears twice" }
            guard let limit = acceptable[entry.entryKey] else {
                return "pin \(entry.fingerprint.base64EncodedString()) for \(entry.name) is not supported by this vantage point's own observations"
            }
            guard entry.expires <= limit else { return "pin \(entry.fingerprint.base64EncodedString()) for \(entry.name) expires later than this vantage point would publish it" }
            guard view.trustedKeys.contains(where: { ListReadBack.entrySignatureIsValid(item.signature, for: entry, publicKey: $0) }) else {
                return "entry \(entry.name) is not signed by a list key"
            }
        }
        // And nothing this vantage point's plan publishes is left out (an old list re-proposed
        // would otherwise hold back every new pin), but for pins at the very end of their grace
        // period, which another vantage point may have withdrawn a probe sooner. (A pin only
        // just out of sight stays: a compromised vantage point and an intercepted honest one
        // must not be able to drop a pin the others see and just published.)
        for pin in view.plan.pins where !seen.contains(pin.entryKey) {
            if let since = pin.notServedSince, view.now.timeIntervalSince(since) >= view.gracePeriod - view.withdrawalTolerance { continue }
            return "it leaves out pin \(pin.value) of \(pin.partnerID), which this vantage point's own plan publishes"
        }

        // The same bytes this vantage point's writer makes from those entries and its own sections.
        var signed: [(entry: FingerprintEntry, signature: Data)] = []
        for item in parsed.entries {
            guard let text = item.signature, let signature = Data(base64Encoded: text) else { return "entry \(item.entry.name) has no signature" }
            signed.append((item.entry, signature))
        }
        let rebuilt: Data
        do {
            rebuilt = try FingerprintListSigner.unsignedStaticList(signed, timestamp: timestamp, version: view.version, expires: expires,
                                                                   certificateTransparency: view.certificateTransparencySection,
                                                                   revocations: view.revocations, crl: view.crl, labelledSignatures: true)
        } catch {
            return "this vantage point cannot write such a list: \(error.reason)"
        }
        guard rebuilt == body else {
            return "the body is not the list this vantage point would write (a section other than the entries differs: CT, revocations, crl, or a member of its own)"
        }
        return nil
    }

    /// The host names of entries `proposal` carries that this vantage point's own observations
    /// do not support (lowercased; empty when the body is not a list).
    package static func unsupportedNames(in proposal: Proposal, view: View) -> Set<String> {
        guard let body = proposal.bodyBytes, let parsed = try? ListReadBack.parse(body) else { return [] }
        let acceptable = acceptableExpiries(proposal, view: view)
        return Set(parsed.entries.filter { acceptable[$0.entry.entryKey] == nil }.map { $0.entry.name.lowercased() })
    }

    /// Entry key (`name kind value`) to the latest `expires` this vantage point gives it.
    static func acceptableExpiries(_ proposal: Proposal, view: View) -> [String: Int64] {
        var limits: [String: Int64] = [:]
        func allow(_ key: String, _ expires: Int64) { limits[key] = max(limits[key] ?? .min, expires) }
        for pin in view.plan.pins { allow(pin.entryKey, pin.expires) }
        let nowSeconds = seconds(view.now)
        for pin in view.plan.withdrawn where pin.expires > nowSeconds {
            guard let since = pin.notServedSince,
                  view.now.timeIntervalSince(since) < view.gracePeriod + view.withdrawalTolerance else { continue }
            allow(pin.entryKey, pin.expires)
        }
        for change in approvedChanges(proposal.approvals, view: view) {
            guard let pin = change.pin else { continue }
            allow(PublisherState.PublishedPin(partnerID: change.partnerID, name: change.host, kind: change.kind, value: pin, expires: 0,
                                              source: "approved", notServedSince: nil).entryKey,
                  seconds(change.notAfter))
        }
        return limits
    }

    /// This vantage point's own staged changes that an approval carried by the proposal
    /// approves: the signature verifies with an approver key over exactly the change it staged
    /// (ID, partner, leaf, kind, pin), and the change broke only rules an approval may waive.
    /// Approvals for anything else are ignored.
    package static func approvedChanges(_ approvals: [PublisherState.Approval], view: View) -> [StagedChange] {
        var approved: [StagedChange] = []
        for change in view.plan.staged {
            switch change.outcome {
            case .chainDidNotValidate, .expiresTooSoon, .tooManyPins: continue
            default: break
            }
            guard let pin = change.pin else { continue }
            let message = PublicationRules.approvalMessage(changeID: change.id, partnerID: change.partnerID,
                                                           leafSHA256: change.leafSHA256, kind: change.kind, pin: pin)
            // At most one signature check per approver key and change.
            var checked = Set<String>()
            let vouched = approvals.prefix(maximumApprovals).contains { approval in
                guard approval.changeID == change.id, approval.partnerID == change.partnerID, approval.leafSHA256 == change.leafSHA256,
                      approval.kind == change.kind, approval.pin == pin, checked.insert(approval.keyID).inserted,
                      let signature = Data(base64Encoded: approval.signature) else { return false }
                return view.approverKeys.contains { KeyDocumentTools.keyID(of: $0) == approval.keyID && $0.isValidSignature(signature, for: message) }
            }
            if vouched { approved.append(change) }
        }
        return approved
    }

    /// Seconds since 1970, clamped (a date never traps a conversion).
    static func seconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970.rounded(.down)
        guard value.isFinite else { return 0 }
        return value >= 9.2e18 ? .max : value <= -9.2e18 ? .min : Int64(value)
    }

    private struct Members: Decodable {
        let version: Int64?
        let expires: Int64?
        let timestamp: Int64?
    }
}
