import Foundation
import PinStore

extension PublisherState {
    /// Records one probe round of `partner` at `now`: each validated leaf counts one sighting
    /// however many addresses served it (K counts probes, not load balancers), then keeps the
    /// partner's record within ``Bounds`` (``keepWithinBounds(partnerID:now:minimumRemainingValidity:)``).
    ///
    /// A leaf whose chain does not validate and never did is refused: it is kept as a
    /// ``RefusedLeaf`` digest (counts, dates, bounded words), never as a whole certificate. A
    /// validated chain that presents an announced key marks the announcement deployed.
    ///
    /// - Parameters:
    ///   - minimumRemainingValidity: The publication file's; a leaf expiring sooner can never be
    ///     published, so it is kept as a digest unless a published pin needs it.
    ///   - ctVerdict: Judges a validated chain (leaf first) against the CT log list; nil when no
    ///     log list is configured.
    package mutating func record(_ results: [ProbeResult], partnerID: String, at now: Date,
                                 minimumRemainingValidity: TimeInterval,
                                 ctVerdict: (([Data]) -> CTVerdict)?) {
        // Whole seconds: they survive the state file's JSON exactly, so a span of exactly T
        // read back after a restart is still T (not T minus a rounding error).
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        var record = partners[partnerID] ?? PartnerRecord()
        record.lastProbe = now
        var countedThisRound = Set<String>()
        var refusedThisRound = Set<String>()
        var failures: [String] = []
        for result in results {
            switch result {
            case .unreachable(let address, let reason):
                // Only as many words as the record keeps (a name resolving to thousands of
                // addresses gives thousands of "not probed" lines).
                if failures.count < Bounds.probeFailuresKept { failures.append("\(address): \(reason)") }
            case .observed(let observation):
                let address = Bounds.text(observation.address, bytes: Bounds.addressBytes)
                guard let leafDER = observation.presentedChain.first,
                      let leaf = try? X509Certificate(derRepresentation: leafDER) else {
                    if failures.count < Bounds.probeFailuresKept { failures.append("\(address): the presented leaf is not a certificate") }
                    continue
                }
                let validated = observation.validationFailure == nil && !observation.validatedChain.isEmpty
                let key = leaf.fingerprintBase64
                record.addresses[address] = AddressRecord(lastObserved: now, leafSHA256: key)
                let everValidated = (record.certificates[key]?.sightings ?? 0) > 0
                guard validated || everValidated else {
                    // Never validated: a digest, not a certificate.
                    record.certificates[key] = nil
                    let failure = observation.validationFailure ?? "the chain did not validate"
                    record.noteRefused(key, outcome: RuleOutcome.chainDidNotValidate(failure).code, detail: failure, subject: leaf.subject,
                                       notAfter: leaf.notAfter, at: now, adding: refusedThisRound.insert(key).inserted ? 1 : 0)
                    continue
                }
                var seen = record.certificates[key] ?? SeenCertificate(
                    leafSHA256: key, spkiSHA256: leaf.spkiSHA256Base64, issuerSPKISHA256: nil, issuerNotAfter: nil, caSPKIs: [],
                    subject: Bounds.text(leaf.subject, bytes: Bounds.textBytes), notBefore: leaf.notBefore, notAfter: leaf.notAfter,
                    firstSeen: now, lastSeen: now, sightings: 0, addresses: [], certificateTransparency: nil, validationFailure: nil)
                if validated {
                    let cas = observation.validatedChain.dropFirst().prefix(Bounds.caSPKIsPerCertificate)
                        .compactMap { try? X509Certificate(derRepresentation: $0) }
                    seen.caSPKIs = cas.map(\.spkiSHA256Base64)
                    seen.issuerSPKISHA256 = cas.first?.spkiSHA256Base64
                    seen.issuerNotAfter = cas.first?.notAfter
                    seen.validationFailure = nil
                    if countedThisRound.insert(key).inserted {
                        // A first sighting starts the span; later ones extend it.
                        if seen.sightings == 0 { seen.firstSeen = now }
                        seen.sightings = seen.sightings == .max ? .max : seen.sightings + 1
                        if let ctVerdict {
                            var verdict = ctVerdict(observation.validatedChain)
                            verdict.detail = Bounds.text(verdict.detail, bytes: Bounds.textBytes)
                            seen.certificateTransparency = verdict
                        }
                        markAnnouncementsPresented(partnerID: partnerID, spkiSHA256: leaf.spkiSHA256Base64, at: now)
                    }
                    // It validates now: an earlier refusal of its chain no longer says anything.
                    record.refusedLeaves.removeAll { $0.leafSHA256 == key && $0.outcome == RuleOutcome.chainDidNotValidate("").code }
                } else {
                    seen.validationFailure = Bounds.text(observation.validationFailure ?? "the chain did not validate", bytes: Bounds.textBytes)
                }
                seen.lastSeen = now
                if !seen.addresses.contains(address), seen.addresses.count < Bounds.addressesPerCertificate {
                    seen.addresses.append(address)
                    seen.addresses.sort()
                }
                record.certificates[key] = seen
            }
        }
        let answered = results.contains { if case .observed = $0 { true } else { false } }
        if answered {
            record.lastProbeFailure = nil
        } else if results.isEmpty {
            record.lastProbeFailure = "the host resolved to no address"
        } else {
            let more = results.count - failures.count
            let words = failures.joined(separator: "; ") + (more > 0 ? "; and \(more) more" : "")
            record.lastProbeFailure = Bounds.text(words, bytes: Bounds.probeFailureBytes)
        }
        partners[partnerID] = record
        keepWithinBounds(partnerID: partnerID, now: now, minimumRemainingValidity: minimumRemainingValidity)
    }

    /// Forgets addresses that answered nothing for `age` (a load balancer taken out of DNS):
    /// what they served last no longer keeps a pin alive once the grace period has passed.
    package mutating func forgetAddresses(olderThan age: TimeInterval, at now: Date) {
        for (id, var record) in partners {
            record.addresses = record.addresses.filter { now.timeIntervalSince($0.value.lastObserved) < age }
            partners[id] = record
        }
    }

    /// Marks the live announcements of `spkiSHA256` for the partner as deployed (seen presented
    /// by a validated chain, so by the key's holder).
    private mutating func markAnnouncementsPresented(partnerID: String, spkiSHA256: String, at now: Date) {
        for index in announcements.indices where announcements[index].partnerID == partnerID
            && announcements[index].spkiSHA256 == spkiSHA256 && announcements[index].firstPresented == nil
            && announcements[index].isLive(at: now) && announcements[index].announcedAt <= now {
            announcements[index].firstPresented = now
        }
    }
}

extension PublisherState.PartnerRecord {
    /// Adds `presentations` refused presentations of `leafSHA256` to its digest (seen last at
    /// `now`, first at `firstSeen` or `now`), making the digest if there is none.
    mutating func noteRefused(_ leafSHA256: String, outcome: String, detail: String, subject: String, notAfter: Date,
                              at now: Date, since firstSeen: Date? = nil, adding presentations: Int) {
        let detail = PublisherState.Bounds.text(detail, bytes: PublisherState.Bounds.refusalDetailBytes)
        if let index = refusedLeaves.firstIndex(where: { $0.leafSHA256 == leafSHA256 }) {
            let (sum, overflow) = refusedLeaves[index].presentations.addingReportingOverflow(max(presentations, 0))
            refusedLeaves[index].presentations = overflow ? .max : sum
            refusedLeaves[index].outcome = outcome
            refusedLeaves[index].detail = detail
            refusedLeaves[index].lastSeen = max(refusedLeaves[index].lastSeen, now)
        } else {
            refusedLeaves.append(PublisherState.RefusedLeaf(
                leafSHA256: leafSHA256, outcome: outcome, detail: detail,
                subject: PublisherState.Bounds.text(subject, bytes: PublisherState.Bounds.refusedSubjectBytes),
                notAfter: notAfter, presentations: max(presentations, 0), firstSeen: min(firstSeen ?? now, now), lastSeen: now))
        }
    }
}
