import Foundation
internal import COpenSSL

/// ATS's certificate minimums over a validated chain: every certificate signed with SHA-256 or
/// better, and holding an RSA key of at least 2048 bits or an EC key of at least 256 bits.
///
/// The anchor's own signature (the last certificate's: a root's self-signature, or a directly
/// trusted intermediate's signature by someone outside the chain) is not judged: trust in an
/// anchor comes from its being configured, not from its signature, and ATS does not judge it
/// either. The anchor's key is judged: a weak anchor key would let anyone forge the chain below it.
///
/// Ed25519 and Ed448 keys and signatures are accepted (they carry their own hash and are
/// stronger than the minimums); DSA and other key types are refused.
package struct CertificateStrengthPolicy: Sendable {
    package init() {}

    /// The answer for one chain.
    package enum Verdict: Sendable, Hashable {
        case meetsPolicy
        case failsToMeetPolicy(TransportSecurityViolation)
    }

    /// Accepted signature digests (OpenSSL NIDs): SHA-2 and SHA-3 with at least 256 bits.
    private static let acceptedDigests: Set<Int32> = [
        NID_sha256, NID_sha384, NID_sha512, NID_sha512_256, NID_sha3_256, NID_sha3_384, NID_sha3_512,
    ]

    /// Checks `validatedChain` (DER, leaf first, anchor last, as the normal trust evaluation
    /// returned it). A certificate that cannot be read fails the key requirement: a check is
    /// never skipped for a certificate it cannot see.
    package func check(validatedChain: [Data]) -> Verdict {
        for (depth, facts) in CertificateStrengthFacts.of(validatedChain).enumerated() {
            if let problem = facts.keyProblem {
                return .failsToMeetPolicy(TransportSecurityViolation(requirement: .certificateKeySize, depth: depth, detail: problem))
            }
            if depth < validatedChain.count - 1, let problem = facts.signatureProblem {
                return .failsToMeetPolicy(TransportSecurityViolation(requirement: .certificateSignatureDigest, depth: depth, detail: problem))
            }
        }
        return .meetsPolicy
    }

    /// Both rules for a leaf seen alone, by an adapter that never sees the chain (its
    /// signature is judged: a leaf is never the anchor there).
    package static func check(leaf der: Data) -> TransportSecurityViolation? {
        guard let facts = CertificateStrengthFacts.of([der]).first else { return nil }
        if let problem = facts.keyProblem {
            return TransportSecurityViolation(requirement: .certificateKeySize, depth: 0, detail: problem)
        }
        if let problem = facts.signatureProblem {
            return TransportSecurityViolation(requirement: .certificateSignatureDigest, depth: 0, detail: problem)
        }
        return nil
    }

    fileprivate static func digestProblem(mdNID: Int32, signatureKeyNID: Int32) -> String? {
        if acceptedDigests.contains(mdNID) { return nil }
        if mdNID == NID_undef, signatureKeyNID == NID_ED25519 || signatureKeyNID == NID_ED448 { return nil }
        let name = mdNID == NID_undef ? "an unknown digest" : String(cString: OBJ_nid2sn(mdNID))
        return "signed with \(name), not SHA-256 or better"
    }
}

/// What the policy needs to know about one certificate, read once per distinct certificate.
struct CertificateStrengthFacts: Sendable, Hashable {
    /// Why the key falls short, nil when it meets the minimum.
    let keyProblem: String?
    /// Why the signature's digest falls short, nil when it meets the minimum.
    let signatureProblem: String?

    /// Facts by certificate DER: parsing a certificate costs far more than finding it here, and
    /// servers present the same few certificates on every connection. Keyed by the bytes
    /// themselves (hashing a DER for a dictionary is cheaper than a SHA-256 of it; equal keys are
    /// compared whole). Emptied at ``cacheLimit`` (about a kilobyte a certificate).
    private static let cache = Locked<[Data: CertificateStrengthFacts]>([:])
    private static let cacheLimit = 1_024
    /// Certificates larger than this (real ones are one or two kilobytes) are read every time.
    private static let cacheableSize = 16 * 1_024

    /// The facts of each certificate, in order; one lock for the lookups of a whole chain.
    static func of(_ chain: [Data]) -> [CertificateStrengthFacts] {
        let known = cache.withLock { cache in chain.map { cache[$0] } }
        var facts: [CertificateStrengthFacts] = []
        facts.reserveCapacity(chain.count)
        var read: [Data: CertificateStrengthFacts] = [:]
        for (der, cached) in zip(chain, known) {
            if let cached {
                facts.append(cached)
                continue
            }
            let made = read[der] ?? Self.read(der)
            // Only ordinary sizes are kept: the cache holds the bytes themselves.
            if der.count <= cacheableSize { read[der] = made }
            facts.append(made)
        }
        if !read.isEmpty {
            cache.withLock { cache in
                if cache.count + read.count > cacheLimit { cache.removeAll(keepingCapacity: true) }
                cache.merge(read) { old, _ in old }
            }
        }
        return facts
    }

    private static func read(_ der: Data) -> CertificateStrengthFacts {
        guard let handle = try? X509Handle(der: der) else {
            return CertificateStrengthFacts(keyProblem: "the certificate could not be read", signatureProblem: "the certificate could not be read")
        }
        return CertificateStrengthFacts(keyProblem: keyProblem(handle), signatureProblem: signatureProblem(handle))
    }

    private static func keyProblem(_ handle: X509Handle) -> String? {
        guard let key = X509_get0_pubkey(handle.pointer) else {
            OpenSSLErrorQueue.clear()
            return "the public key could not be read"
        }
        let bits = Int(EVP_PKEY_get_bits(key))
        if EVP_PKEY_is_a(key, "RSA") == 1 || EVP_PKEY_is_a(key, "RSA-PSS") == 1 {
            return bits >= 2048 ? nil : "RSA key of \(bits) bits, fewer than 2048"
        }
        if EVP_PKEY_is_a(key, "EC") == 1 {
            return bits >= 256 ? nil : "EC key of \(bits) bits, fewer than 256"
        }
        if EVP_PKEY_is_a(key, "ED25519") == 1 || EVP_PKEY_is_a(key, "ED448") == 1 { return nil }
        let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
        return "\(type) key of \(bits) bits; only RSA (2048 bits or more) and EC (256 bits or more) keys are accepted"
    }

    private static func signatureProblem(_ handle: X509Handle) -> String? {
        var mdNID: Int32 = NID_undef
        var keyNID: Int32 = NID_undef
        var securityBits: Int32 = 0
        var flags: UInt32 = 0
        guard X509_get_signature_info(handle.pointer, &mdNID, &keyNID, &securityBits, &flags) == 1 else {
            OpenSSLErrorQueue.clear()
            return "the signature algorithm is not one OpenSSL knows"
        }
        return CertificateStrengthPolicy.digestProblem(mdNID: mdNID, signatureKeyNID: keyNID)
    }
}
