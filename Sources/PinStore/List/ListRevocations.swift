import Foundation

/// The `revocations` section of the team's signed list (Chrome's CRLSet model: revocation data
/// pushed through a channel every client already trusts, rather than fetched per connection).
///
/// ```json
/// "revocations": [
///   {"kind": "key", "sha256": "<Base64 SHA-256 of a SubjectPublicKeyInfo>", "note": "CA key stolen 2026-11-20"},
///   {"kind": "certificate", "sha256": "<Base64 SHA-256 of a certificate>", "leaf": true},
///   {"kind": "issuerSerial", "issuerKeySHA256": "<Base64 SPKI SHA-256 of the issuer>", "serial": "0A1B2C", "leaf": true}
/// ]
/// ```
///
/// - `key`: a certificate anywhere in the validated chain with this key is revoked.
/// - `certificate`: this certificate, anywhere in the validated chain, is revoked.
/// - `issuerSerial`: the certificate with this serial number (hex, as `openssl x509 -serial`
///   prints it; a leading `-` for the rare negative one) whose issuer in the validated chain has
///   this key is revoked.
/// - `leaf` (optional, default false): the team states that the entry names an end-entity
///   certificate (or a key only such certificates carry), which a validated chain holds only at
///   its leaf. It does not narrow the check on chain-aware adapters (an entry matches at every
///   position there); it lets an adapter that sees only the leaf (AsyncHTTPClient) rule the entry
///   out when the leaf does not match it. An entry without it refuses every connection such an
///   adapter cannot decide (``PinningFailure/Reason/revocationsNeedChain``).
/// - `note` (optional): free text for the operator, shown in the refusal.
///
/// Honoured only where a signature covers it, as the `certificateTransparency` section is: the
/// whole-list signature of a static list, the response signature in challenge mode
/// (``ListVerifier``). Parsed strictly: a digest that is not 32 bytes of Base64, a serial that is
/// not hex, an entry named twice, an unknown `kind` or member, or more than ``maximumEntries``
/// entries refuses the whole list (the list in force stays), because a revocation this version
/// skipped would be a revocation silently not enforced.
package struct ListRevocations: Sendable {
    /// Revoked keys (SPKI SHA-256), with their entries' notes.
    let keys: [Digest32: Entry]
    /// Revoked certificates (certificate SHA-256).
    let certificates: [Digest32: Entry]
    /// Revoked serial numbers by the SPKI SHA-256 of their issuer.
    let serialsByIssuer: [Digest32: [CertificateSerial: Entry]]
    /// Every revoked serial, whatever its issuer: what a leaf-only adapter can compare.
    let serials: Set<CertificateSerial>
    /// Whether an entry lacks `leaf`, so that a leaf alone can never rule it out.
    let hasEntriesAboveLeaf: Bool

    /// The most entries a list may carry. Chrome's CRLSet holds a few tens of thousands of
    /// serials in about 250 KB; a team's own list revokes what it had to revoke, and the cap
    /// keeps a list from making every store index millions of digests.
    static let maximumEntries = 10_000
    /// The longest `note` read (UTF-8 bytes): it travels in failure texts and reports.
    static let maximumNoteBytes = 256

    /// What one entry says besides what it matches.
    struct Entry: Sendable, Hashable {
        let kind: ListRevocationMatch.Kind
        let leaf: Bool
        let note: String?
    }

    /// Reads a section file (the JSON array a list carries) and checks it as a store would;
    /// what a signer (the publisher) calls before it puts the section in a list.
    package static func checkedSection(_ data: Data) throws(PinStoreError) -> [Wire] {
        let wire: [Wire]
        do {
            wire = try JSONDecoder().decode([Wire].self, from: data)
        } catch {
            throw PinStoreError(.invalidListData, "revocations: not a JSON array of revocations (\(error)).")
        }
        _ = try ListRevocations(wire)
        return wire
    }

    var isEmpty: Bool { keys.isEmpty && certificates.isEmpty && serialsByIssuer.isEmpty }

    /// Reads the section. Throws ``PinStoreError/Code/invalidListData`` saying what is wrong.
    init(_ wire: [Wire]) throws(PinStoreError) {
        func refuse(_ why: String) -> PinStoreError {
            PinStoreError(.invalidListData, "revocations: \(why)")
        }
        guard wire.count <= Self.maximumEntries else {
            throw refuse("\(wire.count) entries; at most \(Self.maximumEntries) are read. Drop entries for certificates that have expired.")
        }
        func digest(_ text: String?, _ member: String, _ position: String) throws(PinStoreError) -> Digest32 {
            guard let text else { throw refuse("\(position) has no \"\(member)\".") }
            guard let bytes = Base64.decodeStrict(text), let digest = Digest32(bytes) else {
                throw refuse("\(position): \(member) \(String(reflecting: text)) is not the Base64 of a 32-byte SHA-256 digest.")
            }
            return digest
        }
        var keys: [Digest32: Entry] = [:]
        var certificates: [Digest32: Entry] = [:]
        var serialsByIssuer: [Digest32: [CertificateSerial: Entry]] = [:]
        var serials: Set<CertificateSerial> = []
        var aboveLeaf = false
        for (index, item) in wire.enumerated() {
            let position = "entry \(index + 1)"
            if let note = item.note, note.utf8.count > Self.maximumNoteBytes {
                throw refuse("\(position): the note is \(note.utf8.count) bytes; at most \(Self.maximumNoteBytes) are read.")
            }
            let leaf = item.leaf ?? false
            aboveLeaf = aboveLeaf || !leaf
            switch item.kind {
            case "key":
                guard item.serial == nil, item.issuerKeySHA256 == nil else {
                    throw refuse("\(position): a \"key\" entry has only \"sha256\" (with \"leaf\" and \"note\"); for a serial number use kind \"issuerSerial\".")
                }
                let key = try digest(item.sha256, "sha256", position)
                guard keys.updateValue(Entry(kind: .key, leaf: leaf, note: item.note), forKey: key) == nil else {
                    throw refuse("\(position): the key \(key.data.base64EncodedString()) is revoked twice.")
                }
            case "certificate":
                guard item.serial == nil, item.issuerKeySHA256 == nil else {
                    throw refuse("\(position): a \"certificate\" entry has only \"sha256\" (with \"leaf\" and \"note\"); for a serial number use kind \"issuerSerial\".")
                }
                let certificate = try digest(item.sha256, "sha256", position)
                guard certificates.updateValue(Entry(kind: .certificate, leaf: leaf, note: item.note), forKey: certificate) == nil else {
                    throw refuse("\(position): the certificate \(certificate.data.base64EncodedString()) is revoked twice.")
                }
            case "issuerSerial":
                guard item.sha256 == nil else {
                    throw refuse("\(position): an \"issuerSerial\" entry has \"issuerKeySHA256\" and \"serial\", not \"sha256\".")
                }
                let issuer = try digest(item.issuerKeySHA256, "issuerKeySHA256", position)
                guard let text = item.serial else { throw refuse("\(position) has no \"serial\".") }
                let serial: CertificateSerial
                do {
                    serial = try CertificateSerial(hex: text)
                } catch {
                    throw refuse("\(position): \(error.reason)")
                }
                guard serialsByIssuer[issuer, default: [:]].updateValue(Entry(kind: .issuerSerial, leaf: leaf, note: item.note), forKey: serial) == nil else {
                    throw refuse("\(position): the serial \(serial) of the issuer key \(issuer.data.base64EncodedString()) is revoked twice.")
                }
                serials.insert(serial)
            default:
                throw refuse("\(position): kind \(String(reflecting: item.kind)) is not \"key\", \"certificate\" or \"issuerSerial\"; "
                    + "this PinStore cannot enforce it, and a revocation it skipped would not be enforced at all.")
            }
        }
        self.keys = keys
        self.certificates = certificates
        self.serialsByIssuer = serialsByIssuer
        self.serials = serials
        self.hasEntriesAboveLeaf = aboveLeaf
    }

    /// One entry as JSON (what the signing tools write and the list carries). Package-visible so
    /// that PinStoreSigning writes the very shape the store reads. An unknown member is refused,
    /// not ignored: a scope could hide there (`"hosts": [...]` would revoke less than meant).
    package struct Wire: Codable, Sendable, Hashable {
        package let kind: String
        package let sha256: String?
        package let issuerKeySHA256: String?
        package let serial: String?
        package let leaf: Bool?
        package let note: String?

        package init(kind: String, sha256: String? = nil, issuerKeySHA256: String? = nil, serial: String? = nil,
                     leaf: Bool? = nil, note: String? = nil) {
            self.kind = kind
            self.sha256 = sha256
            self.issuerKeySHA256 = issuerKeySHA256
            self.serial = serial
            self.leaf = leaf
            self.note = note
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case kind, sha256, issuerKeySHA256, serial, leaf, note }

        package init(from decoder: any Decoder) throws {
            try StrictMembers.refuseUnknown(in: decoder, known: Set(CodingKeys.allCases.map(\.rawValue)),
                "a revocation has only \"kind\", \"sha256\", \"issuerKeySHA256\", \"serial\", \"leaf\" and \"note\"")
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kind = try container.decode(String.self, forKey: .kind)
            sha256 = try container.decodeIfPresent(String.self, forKey: .sha256)
            issuerKeySHA256 = try container.decodeIfPresent(String.self, forKey: .issuerKeySHA256)
            serial = try container.decodeIfPresent(String.self, forKey: .serial)
            leaf = try container.decodeIfPresent(Bool.self, forKey: .leaf)
            note = try container.decodeIfPresent(String.self, forKey: .note)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(kind, forKey: .kind)
            try container.encodeIfPresent(sha256, forKey: .sha256)
            try container.encodeIfPresent(issuerKeySHA256, forKey: .issuerKeySHA256)
            try container.encodeIfPresent(serial, forKey: .serial)
            try container.encodeIfPresent(leaf, forKey: .leaf)
            try container.encodeIfPresent(note, forKey: .note)
        }
    }
}

extension ListRevocations {
    /// What the revocations say of a connection's certificates.
    enum Verdict: Sendable, Equatable {
        /// No entry matches, and every entry could be ruled out.
        case notRevoked
        /// An entry matches the certificate at `depth` (0 = leaf).
        case revoked(ListRevocationMatch)
        /// The evidence (a leaf alone) cannot rule out an entry.
        case cannotTell
    }

    /// The verdict over `evidence`. Digests are compared through hashed sets, not in constant
    /// time: revocations are public data, and a timing difference tells an attacker only what
    /// the signed list already says.
    func verdict(for evidence: ChainEvidence) -> Verdict {
        switch evidence {
        case .validated(let chain):
            for depth in 0..<chain.count {
                if let entry = keys[chain.keys[depth]] { return .revoked(entry.match(depth: depth)) }
                if let entry = certificates[chain.fingerprints[depth]] { return .revoked(entry.match(depth: depth)) }
                // The issuer is the next certificate; the last one (the anchor) is revoked by its key.
                // Only a certificate whose issuer has revoked serials is parsed for its own serial.
                if depth + 1 < chain.count, let revoked = serialsByIssuer[chain.keys[depth + 1]] {
                    // A chain that validated always parses; never skip the check if it did not.
                    guard let serial = CertificateSerial.of(certificate: chain.certificates[depth], fingerprint: chain.fingerprints[depth]) else {
                        return .cannotTell
                    }
                    if let entry = revoked[serial] { return .revoked(entry.match(depth: depth)) }
                }
            }
            return .notRevoked
        case .leafOnly(let leaf):
            if let key = leaf.key, let entry = keys[key] { return .revoked(entry.match(depth: 0)) }
            if let fingerprint = leaf.fingerprint, let entry = certificates[fingerprint] { return .revoked(entry.match(depth: 0)) }
            // The leaf has a revoked serial number, but whether its issuer has the key the entry
            // names cannot be seen: suspicious enough to refuse, not proof enough to call revoked.
            if let serial = leaf.serial, serials.contains(serial) { return .cannotTell }
            // An entry that may name a certificate above the leaf cannot be ruled out.
            if hasEntriesAboveLeaf { return .cannotTell }
            // Every entry names a leaf: what this leaf does not match, it rules out, provided the
            // digests and the serial are known (the single-certificate validate forms know less).
            if leaf.key == nil, !keys.isEmpty { return .cannotTell }
            if leaf.fingerprint == nil, !certificates.isEmpty { return .cannotTell }
            if leaf.serial == nil, !serials.isEmpty { return .cannotTell }
            return .notRevoked
        }
    }
}

extension ListRevocations.Entry {
    func match(depth: Int) -> ListRevocationMatch {
        ListRevocationMatch(kind: kind, depth: depth, note: note)
    }
}

extension ListRevocations.Wire {
    /// Revokes the key `spkiSHA256` (SHA-256 of a SubjectPublicKeyInfo) wherever it appears.
    /// `leaf`: the team states that only end-entity certificates carry it.
    package static func key(spkiSHA256: Data, leaf: Bool = false, note: String? = nil) -> Self {
        Self(kind: "key", sha256: spkiSHA256.base64EncodedString(), leaf: leaf ? true : nil, note: note)
    }

    /// Revokes the key of `certificate`; marked `leaf` when the certificate cannot issue others.
    package static func key(of certificate: X509Certificate, note: String? = nil) -> Self {
        key(spkiSHA256: SHA256Digest.hash(certificate.subjectPublicKeyInfo), leaf: !certificate.isCertificateAuthority, note: note)
    }

    /// Revokes `certificate` itself (its SHA-256); marked `leaf` when it cannot issue others
    /// (OpenSSL never accepts such a certificate above the leaf of a chain).
    package static func certificate(_ certificate: X509Certificate, note: String? = nil) -> Self {
        Self(kind: "certificate", sha256: certificate.fingerprintBase64, leaf: certificate.isCertificateAuthority ? nil : true, note: note)
    }

    /// Revokes `certificate` by its serial number under the issuer key `issuerKeySHA256`;
    /// marked `leaf` when it cannot issue others.
    package static func issuerSerial(of certificate: X509Certificate, issuerKeySHA256: Data, note: String? = nil) -> Self {
        Self(kind: "issuerSerial", issuerKeySHA256: issuerKeySHA256.base64EncodedString(), serial: certificate.serialNumber.description,
             leaf: certificate.isCertificateAuthority ? nil : true, note: note)
    }
}
