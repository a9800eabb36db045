import Foundation

/// The list-signing keys a store trusts at one moment: a set of P-256 keys and how many of them
/// (`threshold`) must sign a list or the next key document. Today's single `publicKey` is the set
/// of one key with threshold 1, at version ``PinStore/Configuration/trustedKeyVersion``.
///
/// Each key counts once, however many signatures it made: a signature is attributed to a key
/// by its key ID (``keyID(of:)``) or, for the one unlabelled signature the wire format has
/// (`listSignature`, `X-Cert-Pinning-Signature`), by trying the set's keys in order.
struct ListKeySet: Sendable {
    /// The key document version this set comes from (the configured set: the configuration's
    /// ``PinStore/Configuration/trustedKeyVersion``).
    let version: Int64
    /// The keys, in document order.
    let keys: [P256PublicKey]
    /// Their key IDs, in the same order.
    let keyIDs: [String]
    /// Distinct keys whose signatures a list or the next key document needs.
    let threshold: Int
    /// When a key document stops being acceptable as the newest one (Unix seconds); nil for
    /// the configured set, which never expires.
    let expires: Int64?

    /// Most keys one set may hold: enough for 3-of-5 with spares, few enough that trying the
    /// unlabelled signature against every key stays cheap.
    static let maximumKeyCount = 16

    init(version: Int64, keys: [P256PublicKey], threshold: Int, expires: Int64?) throws(PinStoreError) {
        guard !keys.isEmpty, keys.count <= Self.maximumKeyCount else {
            throw PinStoreError(.invalidKeyDocument, "A key set holds 1 to \(Self.maximumKeyCount) keys, not \(keys.count).")
        }
        let ids = keys.map { Self.keyID(of: $0) }
        guard Set(ids).count == ids.count else {
            throw PinStoreError(.invalidKeyDocument, "The key set lists the same key twice; each key counts once toward the threshold, so a duplicate would only mislead.")
        }
        guard (1...keys.count).contains(threshold) else {
            throw PinStoreError(.invalidKeyDocument, "The threshold \(threshold) must be between 1 and the number of keys (\(keys.count)).")
        }
        guard version >= 0 else {
            throw PinStoreError(.invalidKeyDocument, "The key set version \(version) is negative.")
        }
        self.version = version
        self.keys = keys
        self.keyIDs = ids
        self.threshold = threshold
        self.expires = expires
    }

    /// A key's ID: lowercase hex of SHA-256 over its 65-byte X9.63 point. Signers label
    /// signatures with it, so a verifier checks each signature against one key.
    static func keyID(of key: P256PublicKey) -> String {
        SHA256Digest.hash(key.x963Representation).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Whether this set is the single-key set of today's configuration (its behaviour must stay
    /// exactly as it was).
    var isSingleKey: Bool { keys.count == 1 }

    /// DER is the wire encoding; raw r||s (64 bytes) is accepted as a convenience.
    static func verify(_ signature: Data, _ message: Data, with key: P256PublicKey) -> Bool {
        if signature.count == 64, key.isValidRawSignature(signature, for: message) {
            return true
        }
        return key.isValidSignature(signature, for: message)
    }

    /// The distinct keys of this set that signed: `labelled` signatures (key ID, Base64
    /// signature) over `labelledMessage`, and the optional `unlabelled` one over
    /// `unlabelledMessage`, tried against each key not already counted. Stops as soon as the
    /// threshold is reached (extra signatures cost nothing). Signatures by unknown keys, and a
    /// second signature by a counted key, are ignored. At most one labelled signature per key is
    /// ever checked, and at most ``maximumLabelledSignatures`` are looked at: a list or header
    /// repeating junk signatures under a trusted key ID costs one verification per key, not one
    /// per copy.
    func signers(labelled: [(keyID: String, signature: String)], labelledMessage: Data,
                 unlabelled: Data?, unlabelledMessage: Data) -> Set<Int> {
        var signers = Set<Int>()
        if let unlabelled {
            for index in keys.indices where Self.verify(unlabelled, unlabelledMessage, with: keys[index]) {
                signers.insert(index)
                break
            }
        }
        var tried = Set<Int>()
        for (keyID, text) in labelled.prefix(Self.maximumLabelledSignatures) where signers.count < threshold {
            guard let index = keyIDs.firstIndex(of: keyID.lowercased()), !signers.contains(index),
                  tried.insert(index).inserted, let signature = Base64.decodeStrict(text) else { continue }
            if Self.verify(signature, labelledMessage, with: keys[index]) { signers.insert(index) }
        }
        return signers
    }

    /// How many labelled signatures are looked at in one document: twice the most keys a set
    /// may have, room for every key of an old set and a new one.
    static let maximumLabelledSignatures = 2 * maximumKeyCount
}
