import Foundation
import PinStore

/// Everything the publisher remembers between probes and across restarts: what each partner
/// presented (per certificate: when, how often, where, under which CAs, its CT verdict), the
/// pins it published with their withdrawal clocks, the list it published last, announced keys
/// and approvals. Plain data: the rules (``PublicationRules``) read it, the service changes it,
/// ``StateFile`` keeps it.
package struct PublisherState: Codable, Sendable, Equatable {
    /// Per partner id.
    package var partners: [String: PartnerRecord] = [:]
    /// The pins of the list in force, with their withdrawal clocks.
    package var publishedPins: [PublishedPin] = []
    /// The list published last (nil before the first).
    package var lastPublished: PublishedListRecord?
    /// Keys announced for partners before they are deployed.
    package var announcements: [Announcement] = []
    /// People's (or other keys') approvals of staged changes.
    package var approvals: [Approval] = []

    package init() {}

    /// What one partner showed.
    package struct PartnerRecord: Codable, Sendable, Equatable {
        /// Every leaf seen, by the Base64 SHA-256 of its DER.
        package var certificates: [String: SeenCertificate] = [:]
        /// Every address probed, with what it presented last.
        package var addresses: [String: AddressRecord] = [:]
        /// CAs (Base64 SHA-256 of their SubjectPublicKeyInfo) of the validated chains of
        /// certificates that were published: by default, the CAs allowed to issue the next one.
        package var trustedCAs: [String] = []
        /// The last probe, and why it reached no address (nil when one answered).
        package var lastProbe: Date?
        package var lastProbeFailure: String?

        package init() {}

        /// The leaves currently presented: the last one seen at each address.
        package var servedLeaves: Set<String> {
            Set(addresses.values.compactMap(\.leafSHA256))
        }
    }

    /// One address of a partner.
    package struct AddressRecord: Codable, Sendable, Equatable {
        /// When a certificate was last seen there.
        package var lastObserved: Date
        /// The leaf it presented then.
        package var leafSHA256: String?
    }

    /// One leaf certificate a partner presented.
    package struct SeenCertificate: Codable, Sendable, Equatable {
        /// Base64 SHA-256 of the leaf's DER: its certificate pin.
        package var leafSHA256: String
        /// Base64 SHA-256 of the leaf's SubjectPublicKeyInfo: its key pin.
        package var spkiSHA256: String
        /// Base64 SHA-256 of the issuer's SubjectPublicKeyInfo (nil when the chain did not validate).
        package var issuerSPKISHA256: String?
        /// The issuer certificate's `notAfter` (how long an issuer key pin is useful).
        package var issuerNotAfter: Date?
        /// Base64 SPKI SHA-256 of every certificate above the leaf in the validated chain.
        package var caSPKIs: [String]
        package var subject: String
        package var notBefore: Date
        package var notAfter: Date
        package var firstSeen: Date
        package var lastSeen: Date
        /// Probes (one per round, however many addresses served it) in which it validated.
        package var sightings: Int
        /// Addresses that presented it.
        package var addresses: [String]
        /// The CT verdict under the configured log list (nil when not checked: no section).
        package var certificateTransparency: CTVerdict?
        /// Why the chain did not validate on the last sighting; nil when it did.
        package var validationFailure: String?

        /// The pin this certificate yields for `kind`, and when that pin stops being useful.
        package func pin(_ kind: PublicationFile.PinKind) -> (value: String, expires: Date)? {
            switch kind {
            case .leafCertificate: return (leafSHA256, notAfter)
            case .leafKey: return (spkiSHA256, notAfter)
            case .issuerKey: return issuerSPKISHA256.map { ($0, issuerNotAfter ?? notAfter) }
            }
        }
    }

    /// A CT verdict.
    package struct CTVerdict: Codable, Sendable, Equatable {
        package var compliant: Bool
        /// The checker's words (which SCTs, which profile).
        package var detail: String
    }

    /// A pin of the list in force.
    package struct PublishedPin: Codable, Sendable, Equatable {
        package var partnerID: String
        package var name: String
        package var kind: PublicationFile.PinKind
        /// Base64 SHA-256.
        package var value: String
        package var expires: Int64
        /// `observed`, `announced` or `approved`.
        package var source: String
        /// When it was first found no longer presented (the withdrawal clock); nil while served.
        package var notServedSince: Date?
    }

    /// The list published last.
    package struct PublishedListRecord: Codable, Sendable, Equatable {
        package var version: Int64
        package var timestamp: Int64
        package var expires: Int64
        /// Base64 SHA-256 of the exact bytes published.
        package var sha256: String
        package var publishedAt: Date
        /// The entries it carried, as `name kind value expires` strings (what a change is compared with).
        package var entries: [String]
        /// The `revocations` section it carried (nil in a state file written before revocations):
        /// a changed section makes the next list due at once.
        package var revocations: [ListRevocations.Wire]? = nil
        /// The `crl` section it carried (nil when none, and in a state file written before it):
        /// a changed section makes the next list due at once.
        package var crl: CRLHostList.Wire? = nil
    }

    /// A key announced for a partner before it is deployed.
    package struct Announcement: Codable, Sendable, Equatable {
        package var partnerID: String
        /// Base64 SHA-256 of the key's SubjectPublicKeyInfo.
        package var spkiSHA256: String
        package var announcedAt: Date
        package var expires: Date
    }

    /// An approval of a staged change: a signature by a trusted or approver key over
    /// ``PublicationRules/approvalMessage(changeID:partnerID:leafSHA256:kind:pin:)``.
    package struct Approval: Codable, Sendable, Equatable {
        package var changeID: String
        package var partnerID: String
        package var leafSHA256: String
        package var kind: PublicationFile.PinKind
        /// The pin approved (Base64 SHA-256).
        package var pin: String
        package var keyID: String
        /// Base64 DER.
        package var signature: String
        package var approvedAt: Date
    }
}

extension PublisherState {
    /// Records one probe round of `partner` at `now`: each validated leaf counts one sighting
    /// however many addresses served it (K counts probes, not load balancers).
    ///
    /// - Parameter ctVerdict: judges a validated chain (leaf first) against the CT log list;
    ///   nil when no log list is configured.
    package mutating func record(_ results: [ProbeResult], partnerID: String, at now: Date,
                                 ctVerdict: (([Data]) -> CTVerdict)?) {
        // Whole seconds: they survive the state file's JSON exactly, so a span of exactly T
        // read back after a restart is still T (not T minus a rounding error).
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        var record = partners[partnerID] ?? PartnerRecord()
        record.lastProbe = now
        var countedThisRound = Set<String>()
        var failures: [String] = []
        for result in results {
            switch result {
            case .unreachable(let address, let reason):
                failures.append("\(address): \(reason)")
            case .observed(let observation):
                guard let leafDER = observation.presentedChain.first,
                      let leaf = try? X509Certificate(derRepresentation: leafDER) else {
                    failures.append("\(observation.address): the presented leaf is not a certificate")
                    continue
                }
                let validated = observation.validationFailure == nil && !observation.validatedChain.isEmpty
                let key = leaf.fingerprintBase64
                var seen = record.certificates[key] ?? SeenCertificate(
                    leafSHA256: key, spkiSHA256: leaf.spkiSHA256Base64, issuerSPKISHA256: nil, issuerNotAfter: nil, caSPKIs: [],
                    subject: leaf.subject, notBefore: leaf.notBefore, notAfter: leaf.notAfter, firstSeen: now, lastSeen: now,
                    sightings: 0, addresses: [], certificateTransparency: nil, validationFailure: nil)
                if validated {
                    let cas = observation.validatedChain.dropFirst().compactMap { try? X509Certificate(derRepresentation: $0) }
                    seen.caSPKIs = cas.map(\.spkiSHA256Base64)
                    seen.issuerSPKISHA256 = cas.first?.spkiSHA256Base64
                    seen.issuerNotAfter = cas.first?.notAfter
                    seen.validationFailure = nil
                    if countedThisRound.insert(key).inserted {
                        // A first sighting starts the span; later ones extend it.
                        if seen.sightings == 0 { seen.firstSeen = now }
                        seen.sightings += 1
                        if let ctVerdict { seen.certificateTransparency = ctVerdict(observation.validatedChain) }
                    }
                } else {
                    seen.validationFailure = observation.validationFailure ?? "the chain did not validate"
                }
                seen.lastSeen = now
                if !seen.addresses.contains(observation.address) {
                    seen.addresses.append(observation.address)
                    seen.addresses.sort()
                }
                record.certificates[key] = seen
                record.addresses[observation.address] = AddressRecord(lastObserved: now, leafSHA256: key)
            }
        }
        let answered = results.contains { if case .observed = $0 { true } else { false } }
        record.lastProbeFailure = answered ? nil : results.isEmpty ? "the host resolved to no address" : failures.joined(separator: "; ")
        partners[partnerID] = record
    }

    /// Forgets addresses that answered nothing for `age` (a load balancer taken out of DNS):
    /// what they served last no longer keeps a pin alive once the grace period has passed.
    package mutating func forgetAddresses(olderThan age: TimeInterval, at now: Date) {
        for (id, var record) in partners {
            record.addresses = record.addresses.filter { now.timeIntervalSince($0.value.lastObserved) < age }
            partners[id] = record
        }
    }
}
