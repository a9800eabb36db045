import Foundation

/// What the pin rules can see of a server's certificates: the whole chain the normal trust
/// evaluation validated, or only its leaf (AsyncHTTPClient's connection hooks expose nothing
/// more).
///
/// Every question is answered in three values: `true` (proved), `false` (disproved) or nil
/// (the evidence cannot tell: a pin above the leaf asked of a leaf alone, or a digest the
/// caller did not give). A rule treats nil as
/// "not proved", so a leaf-only decision can only be stricter than the chain-aware one.
enum ChainEvidence: Sendable {
    /// The chain the normal trust evaluation validated, leaf first.
    case validated(ValidatedChain)
    /// Only the leaf, which the platform's default verification accepted.
    case leafOnly(LeafCertificate)

    /// The leaf a leaf-only adapter saw: its DER and the two digests pins compare. The
    /// single-certificate ``PinStore/matchPins(commonName:fingerprint:)`` forms know less of it
    /// (a lone fingerprint, a lone key): what they do not know is nil, and every question that
    /// needs it is answered "cannot tell".
    struct LeafCertificate: Sendable {
        var der: Data? = nil
        var fingerprint: Digest32? = nil
        var key: Digest32? = nil
        /// The serial number, for the list's issuer-and-serial revocations.
        var serial: CertificateSerial? = nil
    }

    /// The certificates a decision reports as validated (leaf first; the leaf alone for a
    /// leaf-only adapter).
    var certificates: [Data] {
        switch self {
        case .validated(let chain): chain.certificates
        case .leafOnly(let leaf): leaf.der.map { [$0] } ?? []
        }
    }

    /// Whether a pin of `kind` with SHA-256 `digest` matches: the one meaning of every pin,
    /// list entry, fallback entry or static policy.
    func matches(_ kind: PinIdentity.Kind, digest: Digest32) -> Bool? {
        switch self {
        case .validated(let chain):
            switch kind.backing {
            case .certificate(let depth?): return depth < chain.count && chain.fingerprints[depth].constantTimeEquals(digest)
            case .certificate(nil): return chain.fingerprints.contains { $0.constantTimeEquals(digest) }
            case .leafKey: return chain.keys[0].constantTimeEquals(digest)
            case .caKey: return chain.keys.dropFirst().contains { $0.constantTimeEquals(digest) }
            case .anyKey: return chain.keys.contains { $0.constantTimeEquals(digest) }
            case .key(let depth): return depth < chain.count && chain.keys[depth].constantTimeEquals(digest)
            }
        case .leafOnly(let leaf):
            // A digest the caller did not give (nil) proves nothing and disproves nothing.
            switch kind.backing {
            case .certificate(.some(0)): return leaf.fingerprint?.constantTimeEquals(digest)
            case .leafKey, .key(0): return leaf.key?.constantTimeEquals(digest)
            // A match on the leaf proves the pin; no match leaves an issuer that may match.
            case .certificate(nil): return leaf.fingerprint?.constantTimeEquals(digest) == true ? true : nil
            case .anyKey: return leaf.key?.constantTimeEquals(digest) == true ? true : nil
            case .certificate, .caKey, .key: return nil
            }
        }
    }

    /// Whether a pin matches a certificate above the leaf (Apple's CA category): a pin that
    /// could match any position counts only there.
    func matchesAboveLeaf(_ kind: PinIdentity.Kind, digest: Digest32) -> Bool? {
        switch kind.backing {
        case .certificate(.some(0)), .key(0), .leafKey: return false
        case .certificate(nil):
            guard case .validated(let chain) = self else { return nil }
            return chain.fingerprints.dropFirst().contains { $0.constantTimeEquals(digest) }
        case .caKey, .anyKey:
            guard case .validated(let chain) = self else { return nil }
            return chain.keys.dropFirst().contains { $0.constantTimeEquals(digest) }
        case .certificate, .key: return matches(kind, digest: digest)
        }
    }

    /// The depth of the first certificate whose key is in `denied`; nil when none. For a leaf
    /// alone, `.some(nil)`: the keys above it cannot be seen, so no is never proved.
    func deniedDepth(_ denied: [Digest32]) -> Int?? {
        switch self {
        case .validated(let chain):
            for (depth, key) in chain.keys.enumerated() where denied.contains(where: { $0.constantTimeEquals(key) }) {
                return .some(depth)
            }
            return nil
        case .leafOnly(let leaf):
            guard let key = leaf.key else { return .some(nil) }
            return denied.contains(where: { $0.constantTimeEquals(key) }) ? .some(0) : .some(nil)
        }
    }
}

/// Three-valued "any": true when one is true, nil when none is but one is unknown.
func anyProved(_ values: some Sequence<Bool?>) -> Bool? {
    var unknown = false
    for value in values {
        switch value {
        case true?: return true
        case nil: unknown = true
        case false?: continue
        }
    }
    return unknown ? nil : false
}
