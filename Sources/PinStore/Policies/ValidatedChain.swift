import Foundation

/// A chain the normal trust evaluation validated (leaf first, anchor last), with the digests
/// the pin rules compare: each certificate's SHA-256 and its SPKI's SHA-256.
///
/// Made only from the output of ``ChainValidator`` (or the platform's trust evaluation on Apple
/// platforms) by the pin check itself, so a rule can never be handed a chain as presented.
struct ValidatedChain: Sendable {
    /// DER, leaf first.
    let certificates: [Data]
    /// SHA-256 of each certificate's DER.
    let fingerprints: [Digest32]
    /// SHA-256 of each certificate's SubjectPublicKeyInfo DER.
    let keys: [Digest32]
    /// Each certificate's subject, for failure text.
    let subjects: [String]

    var count: Int { certificates.count }

    /// nil when the chain is empty or a certificate does not parse (the caller refuses: a pin
    /// check must never be skipped for a chain it cannot read).
    init?(validated der: [Data]) {
        guard !der.isEmpty else { return nil }
        var fingerprints: [Digest32] = []
        var keys: [Digest32] = []
        var subjects: [String] = []
        for certificate in der {
            guard let parsed = try? X509Certificate(derRepresentation: certificate),
                  let fingerprint = Digest32(parsed.fingerprint),
                  let key = Digest32(SHA256Digest.hash(parsed.subjectPublicKeyInfo)) else { return nil }
            fingerprints.append(fingerprint)
            keys.append(key)
            subjects.append(parsed.subject)
        }
        self.certificates = der
        self.fingerprints = fingerprints
        self.keys = keys
        self.subjects = subjects
    }

    /// OkHttp-style lines: `sha256/<SPKI>: <subject> (certificate <fingerprint>)`, leaf first.
    var summary: [String] {
        (0..<count).map { i in
            "sha256/\(keys[i].data.base64EncodedString()): \(subjects[i]) (certificate \(fingerprints[i].data.base64EncodedString()))"
        }
    }
}
