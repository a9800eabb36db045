import Foundation
import PinStore

/// Everything the publisher remembers between probes and across restarts: what each partner
/// presented (per certificate: when, how often, where, under which CAs, its CT verdict), the
/// pins it published with their withdrawal clocks, the list it published last, announced keys
/// and approvals. Plain data: the rules (``PublicationRules``) read it, the service changes it,
/// ``StateFile`` keeps it.
///
/// What a partner presents is input, not instruction: each partner's share is bounded whatever
/// it presents (``Bounds``, `PublisherState+Bounds.swift`), so no partner can grow the file past
/// what the publisher reads back and take the others down with it.
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
    /// The version of a published list the after-publish command has not yet run for (it
    /// failed, or the process stopped first): run again each round until it exits 0.
    package var afterPublishOwed: Int64?

    package init() {}

    /// What one partner showed, within ``Bounds``.
    package struct PartnerRecord: Codable, Sendable, Equatable {
        /// The leaves that may still be published (their chain validated once, they are not
        /// expiring), by the Base64 SHA-256 of their DER: at most ``Bounds/certificates``, the
        /// ones presented now and behind published pins first.
        package var certificates: [String: SeenCertificate] = [:]
        /// The addresses probed, with what each presented last: at most ``Bounds/addresses``,
        /// the most recently observed.
        package var addresses: [String: AddressRecord] = [:]
        /// CAs (Base64 SHA-256 of their SubjectPublicKeyInfo) of the validated chains of
        /// certificates that were published: by default, the CAs allowed to issue the next one.
        /// At most ``Bounds/trustedCAs``, those of the latest published certificates first.
        package var trustedCAs: [String] = []
        /// The last probe, and why it reached no address (nil when one answered).
        package var lastProbe: Date?
        package var lastProbeFailure: String?
        /// Leaves that can never be published (their chain never validated, or they expire within
        /// `minimumRemainingValidity`), as digests with counts: at most ``Bounds/refusedLeaves``,
        /// the ones presented now first, then the most recently seen (the oldest are dropped).
        package var refusedLeaves: [RefusedLeaf] = []
        /// How many leaves were forgotten to stay within ``Bounds`` (a partner presenting a new
        /// leaf at every handshake drives it up; an honest one leaves it at 0).
        package var forgottenLeaves: Int = 0

        package init() {}

        private enum CodingKeys: String, CodingKey {
            case certificates, addresses, trustedCAs, lastProbe, lastProbeFailure, refusedLeaves, forgottenLeaves
        }

        /// Reads a record; `refusedLeaves` and `forgottenLeaves` are absent from state files
        /// written before the bounds, which still load.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            certificates = try container.decodeIfPresent([String: SeenCertificate].self, forKey: .certificates) ?? [:]
            addresses = try container.decodeIfPresent([String: AddressRecord].self, forKey: .addresses) ?? [:]
            trustedCAs = try container.decodeIfPresent([String].self, forKey: .trustedCAs) ?? []
            lastProbe = try container.decodeIfPresent(Date.self, forKey: .lastProbe)
            lastProbeFailure = try container.decodeIfPresent(String.self, forKey: .lastProbeFailure)
            refusedLeaves = try container.decodeIfPresent([RefusedLeaf].self, forKey: .refusedLeaves) ?? []
            forgottenLeaves = try container.decodeIfPresent(Int.self, forKey: .forgottenLeaves) ?? 0
        }

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
        /// Addresses that presented it (the first ``Bounds/addressesPerCertificate``).
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

    /// A leaf that can never be published, kept as a digest with counts (what `pending` shows
    /// of it while it is presented) instead of the whole certificate.
    package struct RefusedLeaf: Codable, Sendable, Equatable {
        /// Base64 SHA-256 of the leaf's DER.
        package var leafSHA256: String
        /// Why it is refused: ``RuleOutcome/code`` (`chainDidNotValidate` or `expiresTooSoon`).
        package var outcome: String
        /// The refusal in words (the validation failure), bounded.
        package var detail: String
        /// The leaf's subject, bounded (for people only).
        package var subject: String
        package var notAfter: Date
        /// Probes (one per round, however many addresses presented it) that presented it.
        package var presentations: Int
        package var firstSeen: Date
        package var lastSeen: Date
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

    /// A key announced for a partner before it is deployed. It is pinned until it is seen
    /// presented; then while it is presented; once it is no longer presented, its pin follows
    /// the normal withdrawal (`gracePeriod`) and the announcement ends. `expires`
    /// (`announcementLifetime`) ends it in any case.
    package struct Announcement: Codable, Sendable, Equatable {
        package var partnerID: String
        /// Base64 SHA-256 of the key's SubjectPublicKeyInfo.
        package var spkiSHA256: String
        package var announcedAt: Date
        package var expires: Date
        /// The first probe after the announcement in which a validated chain presented the key
        /// (the key's holder finished the handshake); nil while it is not deployed (and in state
        /// files written before it).
        package var firstPresented: Date? = nil
        /// When its pin left the list after the key was retired; nil while it counts.
        package var ended: Date? = nil

        package init(partnerID: String, spkiSHA256: String, announcedAt: Date, expires: Date,
                     firstPresented: Date? = nil, ended: Date? = nil) {
            self.partnerID = partnerID
            self.spkiSHA256 = spkiSHA256
            self.announcedAt = announcedAt
            self.expires = expires
            self.firstPresented = firstPresented
            self.ended = ended
        }

        /// Whether it still pins its key at `now` (not ended, not expired).
        package func isLive(at now: Date) -> Bool { ended == nil && expires > now }
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
