import Foundation

/// A chain the normal trust evaluation validated (leaf first, anchor last), with the digests
/// the pin rules compare: each certificate's SHA-256 and its SPKI's SHA-256.
///
/// The proof that trust was evaluated, carried from the evaluation to every later pin check
/// (rustls's `ServerCertVerified`): the evaluator makes it only from the output of
/// ``ChainValidator`` (or the platform's trust evaluation on Apple platforms), through
/// ``init(trustEvaluationOutput:)``, and the adapters keep the one they were handed (a pooled
/// connection is checked again with the chain it was admitted with). The only other maker is
/// ``init(alreadyValidatedByCaller:)``, for the public `[Data]` forms whose caller vouches for
/// the chain; it is internal, so no adapter can take a presented chain for a validated one.
package struct ValidatedChain: Sendable {
    /// DER, leaf first.
    package let certificates: [Data]
    /// SHA-256 of each certificate's DER.
    let fingerprints: [Digest32]
    /// SHA-256 of each certificate's SubjectPublicKeyInfo DER.
    let keys: [Digest32]

    package var count: Int { certificates.count }

    /// SPKI digests by certificate digest. Parsing a certificate (OpenSSL 3 decodes its key
    /// through the provider framework) costs about a hundred times the rest of the pin check,
    /// and servers present the same few certificates on every connection. A pure function of
    /// the certificate bytes (keyed by their SHA-256), so it can be shared by every store;
    /// emptied when it reaches ``keyCacheLimit``.
    private static let keyCache = Locked<[Digest32: Digest32]>([:])
    private static let keyCacheLimit = 4_096

    /// The chain a trust evaluation returned: ``ChainValidator``'s output, or `SecTrust`'s on
    /// Apple platforms. The only way the pinning evaluator makes one.
    init?(trustEvaluationOutput der: [Data]) {
        self.init(der)
    }

    /// A chain the caller says was validated, without proof: only where a public `[Data]` form
    /// promises in its documentation that the caller passes the output of a trust evaluation
    /// (``PinStore/matchPins(commonName:certificateChain:)``), and in benchmarks and tests.
    /// Loudly named so that no new call site takes a presented chain for a validated one by
    /// accident; adapters never call it (they keep the chain their evaluation made).
    init?(alreadyValidatedByCaller der: [Data]) {
        self.init(der)
    }

    /// nil when the chain is empty or a certificate does not parse (the caller refuses: a pin
    /// check must never be skipped for a chain it cannot read). Reads only the key of each
    /// certificate (one `d2i_X509` each), never the names and dates: this runs per connection.
    private init?(_ der: [Data]) {
        guard !der.isEmpty else { return nil }
        var fingerprints: [Digest32] = []
        var keys: [Digest32] = []
        fingerprints.reserveCapacity(der.count)
        keys.reserveCapacity(der.count)
        for certificate in der {
            guard let fingerprint = Digest32(SHA256Digest.hash(certificate)),
                  let key = Self.publicKeyDigest(of: certificate, fingerprint: fingerprint) else { return nil }
            fingerprints.append(fingerprint)
            keys.append(key)
        }
        self.certificates = der
        self.fingerprints = fingerprints
        self.keys = keys
    }

    /// SHA-256 of the SubjectPublicKeyInfo of the certificate `der`, whose SHA-256 is
    /// `fingerprint`: from the cache, else read (nil when `der` is not a certificate).
    static func publicKeyDigest(of der: Data, fingerprint: Digest32) -> Digest32? {
        if let key = keyCache.withLock({ $0[fingerprint] }) { return key }
        // Every DER certificate is a SEQUENCE: other bytes (a caller's fingerprint input, say)
        // are refused without OpenSSL's error path, which costs more than hashing them.
        guard der.first == 0x30 else { return nil }
        guard let handle = try? X509Handle(der: der),
              case let spki = handle.subjectPublicKeyInfo, !spki.isEmpty,
              let key = Digest32(SHA256Digest.hash(spki)) else { return nil }
        keyCache.withLock { cache in
            if cache.count >= keyCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[fingerprint] = key
        }
        return key
    }

    /// OkHttp-style lines: `sha256/<SPKI>: <subject> (certificate <fingerprint>)`, leaf first.
    /// Parses the certificates again for their subjects: failure text only, never on success.
    var summary: [String] {
        (0..<count).map { i in
            let subject = (try? X509Certificate(derRepresentation: certificates[i]))?.subject ?? "?"
            return "sha256/\(keys[i].data.base64EncodedString()): \(subject) (certificate \(fingerprints[i].data.base64EncodedString()))"
        }
    }
}
