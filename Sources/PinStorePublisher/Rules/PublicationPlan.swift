import Foundation
import PinStore

/// What the rules decided at one moment: the pins the list should carry, what is staged for a
/// person (or waiting for more sightings), what is withdrawn, and which rotation case each
/// partner is in. Made by ``PublicationRules/plan(state:partners:settings:approvals:now:)``;
/// nothing in it has happened yet.
package struct PublicationPlan: Sendable, Equatable {
    /// The pins the list should carry, withdrawal clocks updated (what the state keeps once the
    /// list is published).
    package var pins: [PublisherState.PublishedPin]
    /// Certificates presented but not published, each with its reason.
    package var staged: [StagedChange]
    /// Pins of the list in force that the plan drops (grace period over, or expired).
    package var withdrawn: [PublisherState.PublishedPin]
    /// Per partner id: what the publisher can promise it.
    package var cases: [String: RotationCase]
    /// Per partner id: the CAs of the certificates this plan publishes, which become allowed
    /// issuers of the partner's next certificate once the list is out.
    package var trustedCAs: [String: Set<String>] = [:]
    /// Announced keys that were deployed and are no longer presented: their pins follow the
    /// normal withdrawal, and each announcement ends once its pin has left the list.
    package var retiringAnnouncements: Set<AnnouncedKey> = []
    /// The time the plan was made at.
    package var madeAt: Date = .distantPast

    /// One announced key of one partner.
    package struct AnnouncedKey: Sendable, Hashable {
        package var partnerID: String
        package var spkiSHA256: String
    }

    /// The list entries, sorted: name, kind, value.
    package var entries: [FingerprintEntry] {
        pins.compactMap { pin in
            guard let value = Data(base64Encoded: pin.value) else { return nil }
            return FingerprintEntry(name: pin.name, fingerprint: value, expires: pin.expires, depth: 0, kind: pin.kind.entryKind)
        }
    }

    /// The entries as `name kind value expires` strings, as ``PublisherState/PublishedListRecord/entries``
    /// keeps them: a list is due when they differ.
    package var listKeys: [String] { entries.map(\.listKey) }
}

/// A certificate that is not (yet) published, with why; approvable by its ``id``.
package struct StagedChange: Sendable, Hashable {
    /// Stable across probes and restarts: derived from the partner and the leaf.
    package var id: String
    package var partnerID: String
    package var host: String
    /// The Base64 SHA-256 of the leaf.
    package var leafSHA256: String
    /// The pin it would add.
    package var kind: PublicationFile.PinKind
    package var pin: String?
    package var subject: String
    package var notAfter: Date
    package var outcome: RuleOutcome
    /// False for a certificate only waiting for more sightings (it needs no person).
    package var needsPerson: Bool { !outcome.isWaiting }
    /// True when the pin it yields is already in the list (a leaf rotation under a pinned CA
    /// key that broke a rule: the list does not change, but a person should look).
    package var pinAlreadyPublished: Bool
}

/// What a publisher can and cannot promise for one partner ("what a publisher can and cannot
/// promise" in the operations guide).
package enum RotationCase: String, Sendable, Hashable, Codable {
    /// The next key is pinned before it is deployed (announced, or presented early next to the
    /// current one): clients see no refusal at the cutover.
    case announcedRotation
    /// Pinned by its issuing CA's key: a new leaf from that CA needs no list change, so no
    /// refusal; the rules (CT, allowed CAs) watch which leaves the CA issues.
    case pinnedByCAKey
    /// A leaf pin with no warning of the next one: a swap is seen only when it happens, so
    /// clients refuse the partner from the cutover until the new pin is published (K probes
    /// spanning T) and they update.
    case unannouncedLeafRotation
}

extension PublisherState {
    /// The state once `plan`'s list is published: its pins (with their withdrawal clocks) are
    /// the list in force, the CAs of what it published become allowed issuers (those first, at
    /// most ``Bounds/trustedCAs``), a retired announced key whose pin has left the list ends its
    /// announcement, and expired announcements are forgotten.
    package mutating func adopt(_ plan: PublicationPlan) {
        publishedPins = plan.pins
        for (id, cas) in plan.trustedCAs {
            var record = partners[id] ?? PartnerRecord()
            let older = record.trustedCAs.filter { !cas.contains($0) }
            record.trustedCAs = Array((cas.sorted() + older).prefix(Bounds.trustedCAs))
            partners[id] = record
        }
        for index in announcements.indices where announcements[index].ended == nil {
            let announcement = announcements[index]
            guard plan.retiringAnnouncements.contains(.init(partnerID: announcement.partnerID, spkiSHA256: announcement.spkiSHA256)),
                  !publishedPins.contains(where: { $0.partnerID == announcement.partnerID && $0.kind == .leafKey && $0.value == announcement.spkiSHA256 })
            else { continue }
            announcements[index].ended = plan.madeAt
        }
        announcements.removeAll { $0.expires <= plan.madeAt }
    }
}

extension FingerprintEntry {
    /// `name kind value expires`: what a published list is compared with.
    package var listKey: String { "\(name.lowercased()) \(kind.rawValue) \(fingerprint.base64EncodedString()) \(expires)" }
    /// `name kind value`.
    package var entryKey: String { "\(name.lowercased()) \(kind.rawValue) \(fingerprint.base64EncodedString())" }
}

extension PublicationFile.PinKind {
    /// The pin kind of a list entry kind.
    package init(_ kind: FingerprintEntry.Kind) {
        switch kind {
        case .certificate: self = .leafCertificate
        case .publicKey: self = .leafKey
        case .caPublicKey: self = .issuerKey
        }
    }

    /// The list entry kind this pin becomes.
    package var entryKind: FingerprintEntry.Kind {
        switch self {
        case .leafCertificate: return .certificate
        case .leafKey: return .publicKey
        case .issuerKey: return .caPublicKey
        }
    }
}

extension PublisherState.PublishedPin {
    /// `name kind value`: one list entry's identity.
    package var entryKey: String { "\(name.lowercased()) \(kind.entryKind.rawValue) \(value)" }
}
