import Foundation

/// Chains OpenSSL has verified recently, per trust store, so that repeat connections to the
/// same server skip certificate parsing and verification (OpenSSL 3.0 spends most of a
/// verification decoding certificates, several hundred microseconds a chain).
///
/// A hit needs the identical presented chain (all DER bytes) for the identical host name,
/// inside the window in which every certificate of the verified chain is valid, and no older
/// than ``maximumAge``. The owning ``TrustStore`` empties the cache whenever it reloads a
/// changed system trust store (checked at most once a minute), so a root removed from the
/// system store stops vouching for cached chains within about a minute. Only successes are
/// kept, so a refusal is always re-evaluated.
final class VerifiedChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let hostname: String
        /// SHA-256 over the length-prefixed DER of every presented certificate.
        let digest: Data

        /// nil when the chain cannot be hashed: then the cache is simply not used (an empty
        /// digest would make every chain for the host look alike).
        init?(hostname: String, chain: [Data]) {
            self.hostname = hostname
            var material = Data()
            for der in chain {
                withUnsafeBytes(of: UInt64(der.count).bigEndian) { material.append(contentsOf: $0) }
                material.append(der)
            }
            digest = SHA256Digest.hash(material)
            guard digest.count == SHA256Digest.byteCount else { return nil }
        }
    }

    struct Entry: Sendable {
        /// The verified chain, DER, leaf to anchor.
        let chain: [Data]
        /// Unix seconds from which every certificate is valid (latest notBefore).
        let validFrom: Int64
        /// Unix seconds until which every certificate is valid (earliest notAfter).
        let validUntil: Int64
        /// When the verification ran (monotonic).
        let verifiedAt: ContinuousClock.Instant
    }

    /// How long a verification is reused at most.
    static let maximumAge: Duration = .seconds(300)
    /// Entries kept at most; the cache starts afresh when full.
    static let capacity = 256

    private let entries = Locked<[Key: Entry]>([:])

    /// The cached chain for `key` if it may answer a verification at `seconds`.
    func chain(for key: Key, at seconds: Int64) -> [Data]? {
        guard let entry = entries.withLock({ $0[key] }) else { return nil }
        // As OpenSSL judges it (X509_cmp_time): valid from the notBefore second on, expired
        // from the notAfter second on.
        guard entry.validFrom <= seconds, seconds < entry.validUntil,
              ContinuousClock.now - entry.verifiedAt < Self.maximumAge else { return nil }
        return entry.chain
    }

    /// Forgets every verification (the trust store they were made against changed).
    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    func insert(_ entry: Entry, for key: Key) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
