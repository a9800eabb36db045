import Foundation
import Logging
import PinStore

extension Publisher {
    /// One publication cycle at the clock's time: take any newer list other vantage points
    /// finished; plan; when the planned list differs from the one in force, or re-signing is
    /// due, propose it (or co-sign a proposal for the next version that agrees with this
    /// publisher's own observations); finish the proposal once `threshold` keys signed it; put
    /// the finished list in the output folder. Returns false when something failed (the last
    /// good list stays served, and the schedule retries sooner).
    @discardableResult
    package func cycle() async -> Bool {
        let now = clock.now()
        var succeeded = true
        do {
            try adoptFinishedList(now: now)
        } catch {
            succeeded = false
            logger.warning("a finished list could not be published", metadata: ["pinstore.error": "\(error.reason)"])
        }
        let plan = plan(at: now)
        logNewlyStaged(plan)
        keepWithdrawalClocks(plan)
        save()
        do {
            try await proposalRound(plan: plan, now: now)
        } catch {
            succeeded = false
            logger.warning("the list could not be published; the last good list stays served",
                           metadata: ["pinstore.error": "\(error.reason)", "pinstore.code": "\(error.code)"])
        }
        save()
        updateGauges(plan: plan, now: now)
        return succeeded
    }

    /// Whether the list in force must be replaced at `now`: its pins differ from the plan's,
    /// or re-signing is due (the TUF timestamp pattern: a fresh `expires` before the old one).
    func listIsDue(_ plan: PublicationPlan, now: Date) -> Bool {
        guard !plan.pins.isEmpty else { return false }
        guard let last = state.lastPublished else { return true }
        if last.entries != plan.listKeys { return true }
        // A revocation added to (or removed from) the publication file goes out now, not at
        // the next re-signing.
        if !Self.sameRevocations(last.revocations ?? [], setup.revocations) { return true }
        if !Self.sameCRL(last.crl, setup.crl) { return true }
        return now.timeIntervalSince(last.publishedAt) >= setup.file.resignInterval.seconds
            || Double(last.expires) - now.timeIntervalSince1970 <= setup.file.expires.seconds - setup.file.resignInterval.seconds
    }

    private func proposalRound(plan: PublicationPlan, now: Date) async throws(PublisherError) {
        let due = listIsDue(plan, now: now)
        var version = max(proposals.latestListVersion() ?? 0, state.lastPublished?.version ?? 0) + 1
        var proposal: Proposal?
        // Abandoned proposals (too old, never finished) are skipped: their versions stay unused.
        for _ in 0..<1_000 {
            do {
                proposal = try proposals.proposal(version)
            } catch {
                logger.debug("an unusable proposal is skipped", metadata: ["pinstore.error": "\(error.reason)"])
                proposal = nil
                if isOld(fileAt: proposals.proposalURL(version), now: now) { version += 1; continue }
                return
            }
            guard let existing = proposal, proposals.list(version) == nil,
                  now.timeIntervalSince(existing.createdAt) >= timeout else { break }
            version += 1
        }
        if proposal == nil {
            guard due else { return }
            // Our own proposal for the version before was never finished: the others would not
            // sign it (they see something else). Proposing again first would be refused again,
            // every time, so a minority view would hold publication up for good; leave this
            // version to another vantage point for one timeout. (A lone publisher, or one whose
            // peers are down, proposes again after that.)
            if version > 1, let previous = try? proposals.proposal(version - 1),
               previous.proposer == setup.file.publisherName, proposals.list(version - 1) == nil,
               now.timeIntervalSince(previous.createdAt) < 2 * timeout {
                logger.debug("leaving the next proposal to another vantage point", metadata: ["pinstore.version": "\(version)"])
                return
            }
            let made = try await makeProposal(version: version, plan: plan, now: now)
            if try proposals.create(made) {
                proposal = made
                logger.debug("proposed a list", metadata: ["pinstore.version": "\(version)", "pinstore.pins": "\(made.pins.count)"])
            } else {
                proposal = try proposals.proposal(version)
            }
        }
        guard let proposal else { return }
        if proposals.list(version) == nil {
            if let problem = agreementProblem(proposal, plan: plan, now: now) {
                logger.debug("not co-signing a proposal", metadata: ["pinstore.version": "\(version)", "pinstore.proposer": "\(proposal.proposer)",
                                                                       "pinstore.reason": "\(problem)"])
                return
            }
            try await coSign(proposal)
            try await finishIfSigned(proposal, now: now)
        }
        if let list = proposals.list(version) {
            try publish(list, now: now)
        }
    }

    private var timeout: TimeInterval { setup.file.vantagePoint?.proposalTimeout.seconds ?? 3_600 }

    private func isOld(fileAt url: URL, now: Date) -> Bool {
        let modified = (try? FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date) ?? now
        return now.timeIntervalSince(modified) >= timeout
    }

    /// The proposal of this publisher's plan as list `version`.
    private func makeProposal(version: Int64, plan: PublicationPlan, now: Date) async throws(PublisherError) -> Proposal {
        let timestamp = max(Int64(now.timeIntervalSince1970.rounded(.down)), (state.lastPublished?.timestamp ?? 0))
        let expires = Int64((now.timeIntervalSince1970 + setup.file.expires.seconds).rounded(.down))
        let body = try await assembly.unsignedBody(entries: plan.entries, version: version, timestamp: timestamp, expires: expires,
                                                   certificateTransparency: setup.certificateTransparencySection,
                                                   revocations: setup.revocations, crl: setup.crl)
        let pins = plan.pins.map { pin -> Proposal.Pin in
            let seen = state.partners[pin.partnerID]?.certificates.values.first { $0.pin(pin.kind)?.value == pin.value }
            let kept = state.publishedPins.contains { $0.entryKey == pin.entryKey }
            return Proposal.Pin(partnerID: pin.partnerID, name: pin.name, kind: pin.kind, value: pin.value, expires: pin.expires,
                                source: kept && pin.source == "observed" && seen == nil ? "kept" : pin.source,
                                sightings: seen?.sightings ?? 0, firstSeen: seen?.firstSeen, lastSeen: seen?.lastSeen)
        }
        let approvals = state.approvals.filter { approval in plan.pins.contains { $0.partnerID == approval.partnerID && $0.value == approval.pin } }
        return Proposal(version: version, proposer: setup.file.publisherName, createdAt: now, body: body.base64EncodedString(),
                        bodySHA256: StateFile.hex(SHA256Digest.hash(body)), pins: pins, approvals: approvals)
    }

    /// Why this publisher must not sign `proposal`, or nil when its own observations agree:
    /// every pin is one its own rules publish (its own K sightings), one the list in force
    /// already carries, or one an approval carried by the proposal vouches for; no pin this
    /// publisher still sees presented is dropped; and the body is exactly the pins described,
    /// with an `expires` no later than this publisher would give it.
    package func agreementProblem(_ proposal: Proposal, plan: PublicationPlan, now: Date) -> String? {
        guard let body = proposal.bodyBytes, StateFile.hex(SHA256Digest.hash(body)) == proposal.bodySHA256 else {
            return "the body does not match its hash"
        }
        let parsed: ListReadBack.List
        let verified: (entries: [FingerprintEntry], version: Int64?, expires: Int64?, timestamp: Int64?)
        do {
            parsed = try ListReadBack.parse(body)
            verified = try Self.unsignedSummary(body)
        } catch {
            return "the body is not a list clients accept: \(error.reason)"
        }
        guard verified.version == proposal.version else { return "the body's version is not the proposal's" }
        guard let expires = verified.expires, Double(expires) <= now.timeIntervalSince1970 + setup.file.expires.seconds + 3_600 else {
            return "the list would live longer than \"expires\" allows"
        }
        // The revocations are this publisher's to vouch for too: a proposal that drops one (a
        // stale or compromised vantage point) or adds one (a CA key that would refuse every
        // AsyncHTTPClient connection) is not co-signed.
        guard let revocations = Self.revocations(in: body), Self.sameRevocations(revocations, setup.revocations) else {
            return "the body's revocations are not the ones this vantage point's publication file names"
        }
        // The CRL modes too: a proposal that turns a host's check off (or hard-fails one) is the
        // team's decision, not one vantage point's.
        guard let crl = Self.crl(in: body), Self.sameCRL(crl, setup.crl) else {
            return "the body's crl section is not the one this vantage point's publication file names"
        }
        let bodyKeys = Set(parsed.entries.map(\.entry.entryKey))
        guard bodyKeys == Set(proposal.pins.map(\.entryKey)), parsed.entries.count == proposal.pins.count else {
            return "the body's entries are not the pins the proposal describes"
        }
        // The per-entry signatures are part of what clients verify: they must be by a trusted key.
        for entry in parsed.entries {
            guard setup.trustedKeys.contains(where: { ListReadBack.entrySignatureIsValid(entry.signature, for: entry.entry, publicKey: $0) }) else {
                return "entry \(entry.entry.name) is not signed by a trusted key"
            }
        }
        let approved = verifiedApprovals(proposal.approvals)
        var acceptable = Set(plan.pins.map(\.entryKey))
        acceptable.formUnion(state.publishedPins.map(\.entryKey))
        for approval in proposal.approvals where approved[approval.changeID] != nil {
            if let partner = setup.partners.first(where: { $0.entry.id == approval.partnerID }) {
                acceptable.insert("\(partner.entry.host.lowercased()) \(approval.kind.entryKind.rawValue) \(approval.pin)")
            }
        }
        for pin in proposal.pins where !acceptable.contains(pin.entryKey) {
            return "pin \(pin.value) for \(pin.partnerID) is not supported by this vantage point's own observations"
        }
        let proposed = Set(proposal.pins.map(\.entryKey))
        for pin in plan.pins where pin.notServedSince == nil && pin.source == "observed" && !proposed.contains(pin.entryKey)
            && state.publishedPins.contains(where: { $0.entryKey == pin.entryKey }) {
            return "it drops pin \(pin.value) of \(pin.partnerID), which this vantage point still sees presented"
        }
        return nil
    }

    /// The `revocations` section of a list body, as written (empty when it has none); nil when
    /// the member is there but is not a revocations array.
    static func revocations(in body: Data) -> [ListRevocations.Wire]? {
        struct Member: Decodable { let revocations: [ListRevocations.Wire]? }
        guard let member = try? JSONDecoder().decode(Member.self, from: body) else { return nil }
        return member.revocations ?? []
    }

    /// The `crl` section of a list body, as written (`.some(nil)` when it has none); nil when
    /// the member is there but is not a crl section.
    static func crl(in body: Data) -> CRLHostList.Wire?? {
        struct Member: Decodable { let crl: CRLHostList.Wire? }
        guard let member = try? JSONDecoder().decode(Member.self, from: body) else { return nil }
        return .some(member.crl)
    }

    /// Whether two crl sections give the same hosts the same modes, in whatever order written.
    static func sameCRL(_ a: CRLHostList.Wire?, _ b: CRLHostList.Wire?) -> Bool {
        a.map { Set($0.hosts) } == b.map { Set($0.hosts) }
    }

    /// Whether two sections revoke the same entries, in whatever order they were written.
    static func sameRevocations(_ a: [ListRevocations.Wire], _ b: [ListRevocations.Wire]) -> Bool {
        a.count == b.count && Set(a) == Set(b)
    }

    /// Version, expiry and entries of an unsigned body (no signature is checked).
    private static func unsignedSummary(_ body: Data) throws(PinStoreError) -> (entries: [FingerprintEntry], version: Int64?, expires: Int64?, timestamp: Int64?) {
        struct Members: Decodable { let version: Int64?; let expires: Int64?; let timestamp: Int64? }
        let list = try ListReadBack.parse(body)
        do {
            let members = try JSONDecoder().decode(Members.self, from: body)
            return (list.entries.map(\.entry), members.version, members.expires, members.timestamp)
        } catch {
            throw PinStoreError(.invalidListData, "The list's version, expires or timestamp is not a number.")
        }
    }

    /// Adds this publisher's signatures to `proposal` (once per key).
    private func coSign(_ proposal: Proposal) async throws(PublisherError) {
        guard let body = proposal.bodyBytes else { return }
        let message = try ListAssembly.labelledMessage(of: body)
        let existing = Set(proposals.signatures(proposal.version).filter { $0.bodySHA256 == proposal.bodySHA256 }.map(\.keyID))
        for signer in setup.signers where !existing.contains(signer.keyID) {
            let signature = try await signer.sign(message)
            try proposals.add(ProposalSignature(version: proposal.version, bodySHA256: proposal.bodySHA256, keyID: signer.keyID,
                                                signature: signature.base64EncodedString(), signer: setup.file.publisherName))
        }
    }

    /// Once `threshold` distinct trusted keys signed `proposal`, finishes it and creates
    /// `list-<version>.json` (unless another publisher did first).
    private func finishIfSigned(_ proposal: Proposal, now: Date) async throws(PublisherError) {
        guard let body = proposal.bodyBytes else { return }
        let message = try ListAssembly.labelledMessage(of: body)
        var labelled: [(keyID: String, signature: Data)] = []
        for signature in proposals.signatures(proposal.version) where signature.bodySHA256 == proposal.bodySHA256 {
            guard !labelled.contains(where: { $0.keyID == signature.keyID }),
                  let key = setup.trustedKeys.first(where: { KeyDocumentTools.keyID(of: $0) == signature.keyID }),
                  let bytes = Data(base64Encoded: signature.signature), key.isValidSignature(bytes, for: message) else { continue }
            labelled.append((signature.keyID, bytes))
        }
        guard labelled.count >= setup.threshold, let first = setup.signers.first else { return }
        let list = try await ListAssembly.finish(body, labelled: labelled, first: first)
        try checkPublishable(list, now: now)
        if try proposals.finish(proposal.version, list: list) {
            logger.debug("finished a list", metadata: ["pinstore.version": "\(proposal.version)"])
        }
    }

    /// Throws unless a store trusting the configured keys would install `list` after the list in force.
    @discardableResult
    func checkPublishable(_ list: Data, now: Date) throws(PublisherError) -> (version: Int64, expires: Int64?, timestamp: Int64, entries: [FingerprintEntry]) {
        do {
            return try ListAcceptance.checkPublishable(list, keys: setup.trustedKeys, threshold: setup.threshold,
                                                       previousVersion: state.lastPublished?.version,
                                                       previousTimestamp: state.lastPublished?.timestamp, at: now)
        } catch {
            throw PublisherError(.refusedByRuntime, "The runtime would refuse the list, so it is not published: \(error.reason)")
        }
    }

    /// Publishes the newest finished list of the shared folder when it is newer than the one in force.
    private func adoptFinishedList(now: Date) throws(PublisherError) {
        guard let version = proposals.latestListVersion(), version > (state.lastPublished?.version ?? 0),
              let list = proposals.list(version) else { return }
        try publish(list, now: now)
    }

    /// Checks `list`'s exact bytes as a store would, writes it (and its companions) into the
    /// output folder, and makes it the list in force.
    private func publish(_ list: Data, now: Date) throws(PublisherError) {
        let checked = try checkPublishable(list, now: now)
        try output.publish(list: list, keyDocuments: setup.keyDocuments, certificateTransparency: setup.certificateTransparencySection)
        let previous = Set(state.lastPublished?.entries ?? [])
        let keys = checked.entries.map(\.listKey)
        let plan = plan(at: now)
        let planned = Dictionary(plan.pins.map { ($0.entryKey, $0) }, uniquingKeysWith: { first, _ in first })
        var pins: [PublisherState.PublishedPin] = []
        for entry in checked.entries {
            if var pin = planned[entry.entryKey] {
                pin.expires = entry.expires
                pins.append(pin)
            } else if let partner = setup.partners.first(where: { $0.entry.host.lowercased() == entry.name.lowercased() }) {
                pins.append(PublisherState.PublishedPin(partnerID: partner.entry.id, name: entry.name, kind: PublicationFile.PinKind(entry.kind),
                                                        value: entry.fingerprint.base64EncodedString(), expires: entry.expires,
                                                        source: "observed", notServedSince: nil))
            }
        }
        var adopted = plan
        adopted.pins = pins
        state.adopt(adopted)
        state.lastPublished = PublisherState.PublishedListRecord(
            version: checked.version, timestamp: checked.timestamp, expires: checked.expires ?? checked.timestamp,
            sha256: SHA256Digest.hash(list).base64EncodedString(), publishedAt: now, entries: keys,
            revocations: Self.revocations(in: list), crl: Self.crl(in: list) ?? nil)
        save()
        let added = keys.filter { !previous.contains($0) }.count
        let removed = previous.subtracting(keys).count
        metrics.publishedChanges.increment(by: Int64(added + removed))
        logger.info("published the pin list", metadata: [
            "pinstore.version": "\(checked.version)", "pinstore.entries": "\(keys.count)",
            "pinstore.added": "\(added)", "pinstore.removed": "\(removed)",
            "pinstore.expires": "\(checked.expires ?? 0)",
        ])
    }

    /// Keeps the withdrawal clocks the plan started in the state (so they survive restarts and
    /// the grace period is counted from the first probe that missed the pin).
    private func keepWithdrawalClocks(_ plan: PublicationPlan) {
        let clocks = Dictionary(plan.pins.map { ($0.entryKey, $0.notServedSince) }, uniquingKeysWith: { first, _ in first })
        for index in state.publishedPins.indices {
            if let started = clocks[state.publishedPins[index].entryKey] {
                state.publishedPins[index].notServedSince = started
            } else if state.publishedPins[index].notServedSince == nil {
                state.publishedPins[index].notServedSince = clock.now()
            }
        }
    }

    /// One info line per staged change, the first time it is staged.
    private func logNewlyStaged(_ plan: PublicationPlan) {
        for change in plan.staged where !change.outcome.isWaiting && loggedStaged.insert(change.id).inserted {
            logger.info("a certificate is staged for a person", metadata: [
                "pinstore.change": "\(change.id)", "pinstore.partner": "\(change.partnerID)",
                "pinstore.reason": "\(change.outcome.code)", "pinstore.detail": "\(change.outcome)",
            ])
        }
    }
}
