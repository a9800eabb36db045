import Foundation
internal import COpenSSL

/// The public key of one Certificate Transparency log, parsed once and kept for every SCT the
/// log signed.
///
/// RFC 6962 §2.1.4 allows two kinds of log key: ECDSA on NIST P-256, and RSA (PKCS#1 v1.5 with
/// SHA-256) of at least 2048 bits (OpenSSL's `SCT_MIN_RSA_BITS`). Anything else is refused here,
/// once, rather than found out at every handshake.
///
/// The caller builds one per log when a log list is accepted and reuses it: parsing a key costs
/// more than the signature check it serves.
///
/// ```swift
/// let key = try CTLogKey(spki: logSPKIDER)
/// let ok = key.verify(signature: sct.signature, over: signedBytes)
/// ```
final class CTLogKey: Sendable {
    /// The kinds of key RFC 6962 lets a log have.
    enum Algorithm: Sendable, Equatable {
        /// ECDSA on NIST P-256; SCT signatures are DER `ECDSA-Sig-Value` over SHA-256.
        case ecdsaP256
        /// RSA of at least 2048 bits; SCT signatures are PKCS#1 v1.5 over SHA-256.
        case rsa
    }

    /// The smallest RSA modulus accepted, in bits (`SCT_MIN_RSA_BITS` in OpenSSL's `ct.h`).
    static let minimumRSABits: Int32 = 2048

    /// The DER SubjectPublicKeyInfo as given.
    let spki: Data
    /// The RFC 6962 log id: SHA-256 of ``spki``.
    let id: Digest32
    /// The key's kind, which fixes the signature algorithm its SCTs must name.
    let algorithm: Algorithm
    /// The parsed key, shared by every verification (OpenSSL keys are safe to verify with from
    /// several threads).
    private let key: EVPKey

    /// Parses a log's DER SubjectPublicKeyInfo.
    ///
    /// - Throws: ``PinStoreError/Code/publicKeyMalformed`` when the bytes are not exactly one
    ///   SubjectPublicKeyInfo; ``PinStoreError/Code/ctLogKeyUnsupported`` for a key RFC 6962
    ///   logs cannot have (another curve, RSA below 2048 bits, Ed25519, ...).
    init(spki: Data) throws(PinStoreError) {
        let parsed: OpaquePointer? = spki.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let key = d2i_PUBKEY(nil, &cursor, raw.count) else { return nil }
            // Trailing bytes mean this is not exactly one SPKI, and the log id (a hash of all the
            // bytes) would not be the id the log's SCTs carry.
            guard cursor == base + raw.count else {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let parsed else {
            throw OpenSSLErrorQueue.error(.publicKeyMalformed, "The CT log key is not exactly one DER SubjectPublicKeyInfo (\(spki.count) bytes); a log list carries the key as Base64 of its DER SPKI.")
        }
        let key = EVPKey(taking: parsed)
        if key.isA("EC") {
            guard key.groupName == P256PublicKey.curveName else {
                throw PinStoreError(.ctLogKeyUnsupported, "The CT log key is on curve \(key.groupName ?? "unknown"); RFC 6962 logs use P-256 (prime256v1) or RSA.")
            }
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
                throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not check the CT log key.")
            }
            defer { EVP_PKEY_CTX_free(context) }
            guard EVP_PKEY_public_check(context) == 1 else {
                OpenSSLErrorQueue.clear()
                throw PinStoreError(.publicKeyNotOnCurve, "The CT log key's point is not a valid P-256 public key; the key is corrupt.")
            }
            algorithm = .ecdsaP256
        } else if key.isA("RSA") {
            let bits = EVP_PKEY_get_bits(key.pointer)
            guard bits >= Self.minimumRSABits else {
                throw PinStoreError(.ctLogKeyUnsupported, "The CT log key is RSA with a \(bits)-bit modulus; CT logs use at least \(Self.minimumRSABits) bits, and shorter keys are refused.")
            }
            algorithm = .rsa
        } else {
            throw PinStoreError(.ctLogKeyUnsupported, "The CT log key is a \(key.typeName) key; RFC 6962 logs sign with ECDSA P-256 or RSA.")
        }
        guard let id = Digest32(SHA256Digest.hash(spki)) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not hash the CT log key.")
        }
        self.spki = spki
        self.id = id
        self.key = key
    }

    /// OpenSSL's NID of the only signature algorithm this log's SCTs may name
    /// (`SCT_get_signature_nid`): a log signs with its own key type and SHA-256.
    var signatureNID: Int32 {
        switch algorithm {
        case .ecdsaP256: NID_ecdsa_with_SHA256
        case .rsa: NID_sha256WithRSAEncryption
        }
    }

    /// Whether `signature` is this log's SHA-256 signature of `message` (a DER ECDSA signature
    /// or an RSA PKCS#1 v1.5 one, as the key's kind says). Malformed signatures do not verify;
    /// nothing here throws or traps.
    func verify(signature: Data, over message: Data) -> Bool {
        guard !signature.isEmpty else { return false }
        return signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in key.verifySHA256(signature: sig, message: msg) }
        }
    }
}
