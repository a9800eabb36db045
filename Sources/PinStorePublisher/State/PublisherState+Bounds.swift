import Foundation
import PinStore

extension PublisherState {
    /// What the state keeps of one partner, whatever the partner presents.
    ///
    /// A partner chooses what its servers present: a new certificate at every handshake, from
    /// every address its name resolves to, with a subject as large as a certificate allows.
    /// Kept whole and forever, that grew the state file past the 64 MiB the publisher reads
    /// back, and every command failed for every partner. So each partner's share is bounded:
    ///
    /// | What | At most | Which are kept |
    /// | --- | --- | --- |
    /// | addresses (``PartnerRecord/addresses``) | ``addresses`` (64) | the most recently observed |
    /// | leaves that may be published (``PartnerRecord/certificates``) | ``certificates`` (32) | presented now and behind a published pin, then presented now (most sightings first), then behind a published pin, then the most recently seen |
    /// | refused leaves as digests (``PartnerRecord/refusedLeaves``) | ``refusedLeaves`` (64) | presented now, then the most recently seen |
    /// | allowed CAs learnt from published certificates (``PartnerRecord/trustedCAs``) | ``trustedCAs`` (32) | those of the latest published certificates |
    /// | pins in the list (``PublisherState/publishedPins``) | ``PublicationRules/maximumPinsPerPartner`` (32) | the rules' order (presented now first) |
    /// | words from the certificate or the probe (subject, validation failure, CT detail, probe failure) | 96 to 1,024 bytes each | the start |
    ///
    /// **The bound: a partner's share of the state file (its record, its published pins and
    /// their entries in the last list's record) is at most ``bytesPerPartner``, 160 KiB**,
    /// whatever it presents: 400 partners at their worst still fit in the 64 MiB the publisher
    /// reads back, and an honest partner takes about 2 KiB. Announcements and approvals are people's acts and are
    /// not counted. `StateFile.save` refuses to write a file it could not read back, so even
    /// past that the previous state stays usable.
    ///
    /// What is dropped is only what can never be published or is superseded:
    /// - a leaf whose chain never validated, or that expires within
    ///   `minimumRemainingValidity`, can never be published automatically nor approved: it is a
    ///   digest with counts (``RefusedLeaf``) unless a published pin still needs its record;
    /// - a leaf past the cap that is neither presented nor behind a published pin is forgotten:
    ///   seen again, it starts its K sightings over T again (stricter, never looser);
    /// - the sightings, first and last sightings, CA SPKIs, `notAfter`, CT verdict and
    ///   validation of every leaf kept are kept whole: the rules read them.
    package enum Bounds {
        /// Addresses per partner (two rounds of the prober's 32).
        package static let addresses = 64
        /// Leaves kept whole per partner.
        package static let certificates = 32
        /// Refused-leaf digests per partner (as many as addresses, so every refused leaf
        /// presented now stays visible to `pending`).
        package static let refusedLeaves = 64
        /// CAs learnt from published certificates per partner.
        package static let trustedCAs = 32
        /// Addresses recorded per leaf (for people; the rules read the addresses above).
        static let addressesPerCertificate = 4
        /// CA SPKIs recorded per leaf (the prober's chain limit).
        static let caSPKIsPerCertificate = 8
        /// A leaf's subject, its validation failure, its CT verdict's words (JSON bytes).
        static let textBytes = 192
        /// A refused leaf's words and subject.
        static let refusalDetailBytes = 128
        static let refusedSubjectBytes = 96
        /// Why the last probe reached no address, and how many addresses it names.
        static let probeFailureBytes = 1_024
        static let probeFailuresKept = 8
        /// An address as the prober names it (`[IPv6]:port` fits).
        static let addressBytes = 64
        /// The most one partner takes in the state file (see above; measured in
        /// `PublisherStateBoundsTests`).
        package static let bytesPerPartner = 160 * 1_024

        /// `text` as the state keeps it: control characters replaced by `?` and cut (with `…`)
        /// so that its JSON encoding (`"`, `\` and `/` escaped) takes at most `bytes` bytes.
        static func text(_ text: String, bytes limit: Int) -> String {
            func cost(_ scalar: Unicode.Scalar) -> Int {
                switch scalar {
                case "\"", "\\", "/": return 2
                default: return String(scalar).utf8.count
                }
            }
            let sanitized = text.unicodeScalars.map { scalar -> Unicode.Scalar in
                scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar
            }
            guard sanitized.reduce(0, { $0 + cost($1) }) > limit else {
                var whole = String.UnicodeScalarView()
                whole.append(contentsOf: sanitized)
                return String(whole)
            }
            let ellipsis: Unicode.Scalar = "\u{2026}"
            var cut = String.UnicodeScalarView()
            var used = cost(ellipsis)
            for scalar in sanitized {
                used += cost(scalar)
                guard used <= limit else { break }
                cut.append(scalar)
            }
            cut.append(ellipsis)
            return String(cut)
        }
    }

    /// Keeps `partnerID`'s record within ``Bounds`` at `now`: leaves that can never be
    /// published become digests (unless a published pin needs them), then each collection is
    /// cut to its bound in the order ``Bounds`` gives. Idempotent; run after every probe and on
    /// load (a state file written before the bounds is cut at once).
    package mutating func keepWithinBounds(partnerID: String, now: Date, minimumRemainingValidity: TimeInterval) {
        guard var record = partners[partnerID] else { return }
        var forgotten = 0

        if record.addresses.count > Bounds.addresses {
            let kept = record.addresses.sorted { left, right in
                left.value.lastObserved != right.value.lastObserved ? left.value.lastObserved > right.value.lastObserved : left.key < right.key
            }.prefix(Bounds.addresses)
            record.addresses = Dictionary(kept.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        let served = record.servedLeaves
        let pinned = Set(publishedPins.filter { $0.partnerID == partnerID }.map { "\($0.kind.rawValue) \($0.value)" })
        func isBehindPin(_ certificate: SeenCertificate) -> Bool {
            PublicationFile.PinKind.allCases.contains { kind in
                certificate.pin(kind).map { pinned.contains("\(kind.rawValue) \($0.value)") } ?? false
            }
        }

        // What can never be published becomes a digest, unless a published pin needs its record.
        for (key, certificate) in record.certificates where !isBehindPin(certificate) {
            if certificate.sightings == 0 {
                // Never validated (a state file written before the bounds kept such leaves whole).
                record.certificates[key] = nil
                record.noteRefused(key, outcome: RuleOutcome.chainDidNotValidate("").code,
                                   detail: certificate.validationFailure ?? "the chain did not validate", subject: certificate.subject,
                                   notAfter: certificate.notAfter, at: certificate.lastSeen, since: certificate.firstSeen, adding: 1)
            } else if certificate.notAfter.timeIntervalSince(now) < minimumRemainingValidity {
                record.certificates[key] = nil
                record.noteRefused(key, outcome: RuleOutcome.expiresTooSoon(notAfter: certificate.notAfter).code,
                                   detail: "expires at \(certificate.notAfter), within minimumRemainingValidity", subject: certificate.subject,
                                   notAfter: certificate.notAfter, at: certificate.lastSeen, since: certificate.firstSeen,
                                   adding: certificate.sightings)
            }
        }

        if record.certificates.count > Bounds.certificates {
            func tier(_ certificate: SeenCertificate) -> Int {
                switch (served.contains(certificate.leafSHA256), isBehindPin(certificate)) {
                case (true, true): return 0
                case (true, false): return 1
                case (false, true): return 2
                case (false, false): return 3
                }
            }
            let ranked = record.certificates.values.map { (tier: tier($0), certificate: $0) }.sorted { left, right in
                if left.tier != right.tier { return left.tier < right.tier }
                let (a, b) = (left.certificate, right.certificate)
                if a.sightings != b.sightings { return a.sightings > b.sightings }
                if a.lastSeen != b.lastSeen { return a.lastSeen > b.lastSeen }
                return a.leafSHA256 < b.leafSHA256
            }
            forgotten += ranked.count - Bounds.certificates
            record.certificates = Dictionary(ranked.prefix(Bounds.certificates).map { ($0.certificate.leafSHA256, $0.certificate) },
                                             uniquingKeysWith: { first, _ in first })
        }

        // Digests: presented now first, then the most recently seen; the oldest are dropped.
        record.refusedLeaves.removeAll { record.certificates[$0.leafSHA256] != nil }
        record.refusedLeaves.sort { left, right in
            let (leftServed, rightServed) = (served.contains(left.leafSHA256), served.contains(right.leafSHA256))
            if leftServed != rightServed { return leftServed }
            if left.lastSeen != right.lastSeen { return left.lastSeen > right.lastSeen }
            return left.leafSHA256 < right.leafSHA256
        }
        if record.refusedLeaves.count > Bounds.refusedLeaves {
            forgotten += record.refusedLeaves.count - Bounds.refusedLeaves
            record.refusedLeaves.removeLast(record.refusedLeaves.count - Bounds.refusedLeaves)
        }

        if record.trustedCAs.count > Bounds.trustedCAs {
            record.trustedCAs = Array(record.trustedCAs.prefix(Bounds.trustedCAs))
        }
        if let failure = record.lastProbeFailure {
            record.lastProbeFailure = Bounds.text(failure, bytes: Bounds.probeFailureBytes)
        }
        let (total, overflow) = record.forgottenLeaves.addingReportingOverflow(forgotten)
        record.forgottenLeaves = overflow ? .max : total
        partners[partnerID] = record
    }

    /// ``keepWithinBounds(partnerID:now:minimumRemainingValidity:)`` for every partner.
    package mutating func keepWithinBounds(now: Date, minimumRemainingValidity: TimeInterval) {
        for id in partners.keys.sorted() {
            keepWithinBounds(partnerID: id, now: now, minimumRemainingValidity: minimumRemainingValidity)
        }
    }
}
