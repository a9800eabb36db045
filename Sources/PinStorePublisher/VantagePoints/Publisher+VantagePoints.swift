import Foundation
import Logging
import PinStore

// MARK: - The vantage-point protocol
//
// What each party holds.
// - A vantage point (a publisher process) holds its own list key or keys (a file or a signing
//   command), its own publication file (partners, rules, CT section, revocations, crl section,
//   approverKeys) and its own observations: what its own TLS probes saw and validated from its
//   own network path, kept in its own state file. It trusts nothing another vantage point says.
// - The shared medium (`PublicationMedium`: a folder, later an object store) is trusted for two
//   things only: availability (an object it acknowledged stays, unchanged) and exclusive create
//   (one writer wins a name). Anyone may write into it. Everything read from it is untrusted
//   input: bounded before it is read, never a link, never followed, and no time in it is used
//   (not a file's modification time, not a time a writer put in an object).
// - Clients trust `threshold` (k) of the n list keys: a list counts only with k valid signatures.
//
// The round each vantage point runs (`vantagePointRound`), at version v = one above its own list
// in force (never a version read from a name):
// 1. adopt a finished list of v (k valid signatures, accepted as a store would), and go on;
// 2. review every proposal for v (`ProposalReview`): sign one only when its body is, byte for
//    byte, the list this vantage point would write from its own observations and its own
//    publication file, with approvals honoured only from approverKeys and only for a change it
//    staged itself;
// 3. when none agrees and a list is due, propose its own plan (a new object, beside the others:
//    no proposal, however early, junk or hostile, occupies another's place);
// 4. once a proposal it agrees with has k valid signatures, finish it as `list-<v>-<hash>`.
//
// Safety. With at most k-1 vantage points compromised (host and key) and anyone writing the
// medium: a finished list carries k signatures, so at least one honest vantage point signed it,
// and an honest vantage point signs only (a) version v = one above its own list in force, and
// (b) bytes it would produce itself: every pin is one its own plan publishes (its rules, from its
// own sightings, keeping the list in force's pins through their grace period), one it withdrew
// within a probe, or one an approverKeys key approved for a change it staged itself (rules 1 and
// 2 met locally); nothing its plan publishes is left out (but pins at the very end of their
// grace); every other section equals its own. So no pin
// reaches a finished list unless an honest vantage point accepted it by its own rules, and with
// no vantage point compromised, k of them did.
// Liveness. With k honest vantage points that see the same partners: in the first round one of
// them proposes (or finds another's agreeable proposal) and signs; in the next, the others sign
// the proposals they agree with, k signatures meet on one, and it is finished. Nothing another
// party writes takes a name an honest object needs (names are SHA-256 of the bytes), no read is
// unbounded, and no version is consumed by a proposal that was never finished.
// Not promised: anything against k stolen keys; a medium that loses acknowledged writes, or a
// writer who fills it (more than `SharedProposals.maximumObjectsPerVersion` objects of one kind
// for one version hide the rest); liveness while fewer than k honest vantage points agree.
// The publisher article ("The vantage-point protocol") says the same for operators.

extension Publisher {
    /// How many agreeing proposals of one version this vantage point signs at most, over all its
    /// cycles (honest vantage points converge on one or two; a compromised one cannot make it
    /// sign without end).
    static let maximumCoSignedPerVersion = 4
    /// How many finished lists one cycle adopts at most when catching up.
    static let maximumAdoptedPerCycle = 64

    /// One round of the protocol at `now` with this publisher's `plan` (the comment above).
    func vantagePointRound(plan: PublicationPlan, now: Date) async throws(PublisherError) {
        try adoptFinishedLists(now: now)
        let version = try nextVersion()
        let due = listIsDue(plan, now: now)
        let view = reviewView(plan: plan, version: version, now: now)
        var agreeable: [(name: String, proposal: Proposal, bodySHA256: String)] = []
        let look = shared.visitProposals(version) { name, proposal in
            if let problem = ProposalReview.problem(with: proposal, view: view) {
                probePartnersNamed(by: proposal, view: view)
                metrics.proposalsRefused.increment()
                logger.debug("not co-signing a proposal", metadata: ["pinstore.version": "\(version)", "pinstore.proposal": "\(name)",
                                                                       "pinstore.proposer": "\(proposal.proposer)", "pinstore.reason": "\(problem)"])
                return true
            }
            // Not due, this publisher signs only a proposal that changes the entries (another
            // vantage point's approved change, say): never a churn of identical lists.
            guard due || proposalChangesEntries(proposal), let body = proposal.bodyBytes else { return true }
            let hash = StateFile.hex(SHA256Digest.hash(body))
            let signed = coSignedBodies[version] ?? []
            guard signed.contains(hash) || signed.count < Self.maximumCoSignedPerVersion else { return true }
            agreeable.append((name, proposal, hash))
            return agreeable.count < Self.maximumCoSignedPerVersion
        }
        noteIgnored(look.ignored, truncated: look.truncated, version: version)
        if agreeable.isEmpty {
            guard due else { return }
            let made = try await makeProposal(version: version, plan: plan, now: now)
            if let problem = ProposalReview.problem(with: made, view: view) {
                throw PublisherError(.proposal, "This publisher's own plan is not a list it would sign (\(problem)); nothing is proposed.")
            }
            guard let body = made.bodyBytes else { return }
            let name = try shared.create(made)
            logger.debug("proposed a list", metadata: ["pinstore.version": "\(version)", "pinstore.proposal": "\(name)"])
            agreeable = [(name, made, StateFile.hex(SHA256Digest.hash(body)))]
        }
        var signatures = shared.signatures(version)
        coSignedBodies = coSignedBodies.filter { $0.key >= version }
        for item in agreeable {
            try await coSign(item.proposal, bodySHA256: item.bodySHA256, existing: signatures.objects.map(\.value))
            coSignedBodies[version, default: []].insert(item.bodySHA256)
        }
        signatures = shared.signatures(version)
        noteIgnored(signatures.ignored, truncated: signatures.truncated, version: version)
        // A list another vantage point finished meanwhile is taken, not raced (junk under a
        // list name is not a finished list: only one that verifies counts).
        try adoptFinishedLists(now: now)
        if try nextVersion() == version {
            for item in agreeable {
                if try await finishIfSigned(item.proposal, bodySHA256: item.bodySHA256, signatures: signatures.objects.map(\.value), now: now) {
                    break
                }
            }
        }
        try adoptFinishedLists(now: now)
    }

    /// One above the list in force; an error, never a trap, at the end of `Int64`.
    func nextVersion() throws(PublisherError) -> Int64 {
        let (next, overflow) = (state.lastPublished?.version ?? 0).addingReportingOverflow(1)
        guard !overflow else {
            throw PublisherError(.proposal, "The list in force has the highest version there is; no later list can be published.")
        }
        return next
    }

    /// What this publisher knows when it reviews a proposal for `version`.
    func reviewView(plan: PublicationPlan, version: Int64, now: Date) -> ProposalReview.View {
        ProposalReview.View(version: version, lastTimestamp: state.lastPublished?.timestamp, plan: plan,
                            trustedKeys: setup.trustedKeys, approverKeys: setup.peerApprovalKeys,
                            certificateTransparencySection: setup.certificateTransparencySection, revocations: setup.revocations,
                            crl: setup.crl, listLifetime: setup.file.expires.seconds,
                            freshness: setup.file.vantagePoint?.proposalTimeout.seconds ?? 3_600,
                            gracePeriod: setup.file.gracePeriod.seconds, withdrawalTolerance: setup.file.probeInterval.seconds + 60, now: now)
    }

    /// Whether `proposal`'s entries differ from the list in force's.
    private func proposalChangesEntries(_ proposal: Proposal) -> Bool {
        guard let body = proposal.bodyBytes, let parsed = try? ListReadBack.parse(body) else { return false }
        return parsed.entries.map(\.entry.listKey).sorted() != (state.lastPublished?.entries ?? []).sorted()
    }

    /// The proposal of this publisher's plan as list `version`.
    private func makeProposal(version: Int64, plan: PublicationPlan, now: Date) async throws(PublisherError) -> Proposal {
        let timestamp = max(ProposalReview.seconds(now), state.lastPublished?.timestamp ?? 0)
        let expires = ProposalReview.seconds(now.addingTimeInterval(setup.file.expires.seconds))
        let body = try await assembly.unsignedBody(entries: plan.entries, version: version, timestamp: timestamp, expires: expires,
                                                   certificateTransparency: setup.certificateTransparencySection,
                                                   revocations: setup.revocations, crl: setup.crl)
        // The approvals behind its approved pins, so co-signers with the same approverKeys can
        // check them against the changes they staged themselves.
        let approvals = state.approvals.filter { approval in
            plan.pins.contains { $0.partnerID == approval.partnerID && $0.value == approval.pin && $0.source == "approved" }
        }
        return Proposal(version: version, proposer: setup.file.publisherName, body: body, approvals: approvals)
    }

    /// Adds this publisher's signatures of `proposal` (once per key and body).
    private func coSign(_ proposal: Proposal, bodySHA256: String, existing: [ProposalSignature]) async throws(PublisherError) {
        guard let body = proposal.bodyBytes else { return }
        let message = try ListAssembly.labelledMessage(of: body)
        for signer in setup.signers {
            let mine = existing.contains { signature in
                signature.bodySHA256 == bodySHA256 && signature.keyID == signer.keyID
                    && Data(base64Encoded: signature.signature).map { signer.publicKey.isValidSignature($0, for: message) } ?? false
            }
            guard !mine else { continue }
            let signature = try await signer.sign(message)
            try shared.add(ProposalSignature(version: proposal.version, bodySHA256: bodySHA256, keyID: signer.keyID,
                                             signature: signature.base64EncodedString(), signer: setup.file.publisherName))
        }
    }

    /// Once `threshold` distinct list keys validly signed `proposal`, finishes it; true when a
    /// finished list was written.
    private func finishIfSigned(_ proposal: Proposal, bodySHA256: String, signatures: [ProposalSignature], now: Date) async throws(PublisherError) -> Bool {
        guard let body = proposal.bodyBytes, let first = setup.signers.first else { return false }
        let message = try ListAssembly.labelledMessage(of: body)
        var labelled: [(keyID: String, signature: Data)] = []
        for signature in signatures where signature.bodySHA256 == bodySHA256 {
            guard !labelled.contains(where: { $0.keyID == signature.keyID }),
                  let key = setup.trustedKeys.first(where: { KeyDocumentTools.keyID(of: $0) == signature.keyID }),
                  let bytes = Data(base64Encoded: signature.signature), key.isValidSignature(bytes, for: message) else { continue }
            labelled.append((signature.keyID, bytes))
        }
        guard labelled.count >= setup.threshold else { return false }
        let list = try await ListAssembly.finish(body, labelled: labelled, first: first)
        try checkPublishable(list, now: now)
        let name = try shared.finish(proposal.version, list: list)
        logger.debug("finished a list", metadata: ["pinstore.version": "\(proposal.version)", "pinstore.list": "\(name)"])
        return true
    }

    /// Takes the finished lists of the versions after the list in force, one version at a
    /// time: of several finished lists for one version (two vantage points finished two agreeing
    /// proposals at once), the first by name, so every vantage point that sees both takes the
    /// same. A list that verifies but has since expired (this vantage point was down for longer
    /// than a list lives) becomes the list in force without being served, so the next version
    /// is one above it.
    func adoptFinishedLists(now: Date) throws(PublisherError) {
        for _ in 0..<Self.maximumAdoptedPerCycle {
            let version = try nextVersion()
            var adopted = false
            var failure: PublisherError?
            let look = shared.visit(.list, version: version) { name, list in
                do throws(PublisherError) {
                    let checked = try checkPublishable(list, now: now)
                    guard checked.version == version else {
                        throw PublisherError(.proposal, "it carries version \(checked.version), not \(version)")
                    }
                } catch {
                    // Valid but expired since: the list in force, not served. Anything else: not a list.
                    if adoptExpired(list, version: version) {
                        adopted = true
                        return false
                    }
                    logger.debug("a finished list is not taken", metadata: ["pinstore.list": "\(name)", "pinstore.error": "\(error.reason)"])
                    return true
                }
                // A list clients accept: served now (an output folder that cannot be written
                // fails the cycle, and the next cycle tries again).
                do throws(PublisherError) {
                    try publish(list, now: now)
                    adopted = true
                } catch {
                    failure = error
                }
                return false
            }
            noteIgnored(look.ignored, truncated: look.truncated, version: version)
            if let failure { throw failure }
            guard adopted else { return }
        }
    }

    /// Makes `list` the list in force, without serving it, when it is version `version` with
    /// `threshold` valid signatures and has only expired since.
    private func adoptExpired(_ list: Data, version: Int64) -> Bool {
        struct Members: Decodable { let timestamp: Int64? }
        guard let timestamp = (try? JSONDecoder().decode(Members.self, from: list))?.timestamp,
              let checked = try? ListAcceptance.checkPublishable(list, keys: setup.trustedKeys, threshold: setup.threshold,
                                                                 previousVersion: state.lastPublished?.version,
                                                                 previousTimestamp: state.lastPublished?.timestamp,
                                                                 at: Date(timeIntervalSince1970: TimeInterval(timestamp))),
              checked.version == version else { return false }
        state.lastPublished = PublisherState.PublishedListRecord(
            version: checked.version, timestamp: checked.timestamp, expires: checked.expires ?? checked.timestamp,
            sha256: SHA256Digest.hash(list).base64EncodedString(), publishedAt: clock.now(), entries: checked.entries.map(\.listKey),
            revocations: Self.revocations(in: list), crl: Self.crl(in: list) ?? nil)
        save()
        logger.info("took an expired finished list as the list in force (not served)", metadata: ["pinstore.version": "\(version)"])
        return true
    }

    /// Logs (debug) and counts what a look at the medium skipped.
    private func noteIgnored(_ ignored: [(name: String, reason: String)], truncated: Bool, version: Int64) {
        for item in ignored {
            metrics.mediumObjectsIgnored.increment()
            logger.debug("an object in the proposals medium is ignored", metadata: ["pinstore.name": "\(item.name)", "pinstore.reason": "\(item.reason)"])
        }
        if truncated {
            logger.warning("the proposals medium holds more objects for one version than are read; someone may be flooding it",
                           metadata: ["pinstore.version": "\(version)", "pinstore.limit": "\(SharedProposals.maximumObjectsPerVersion)"])
        }
    }
}
