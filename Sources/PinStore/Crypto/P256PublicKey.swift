import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// An ECDSA P-256 public key, held by the system OpenSSL.
///
/// Build it from any of the encodings apps configure:
/// - Base64 of the 65-byte uncompressed X9.63 point `04 || X || Y` (the form the deployed
///   dynamic-pinning clients configure), or of the 33-byte compressed point;
/// - a DER SubjectPublicKeyInfo, raw or in Base64;
/// - a PEM `PUBLIC KEY` block.
///
/// ```swift
/// let key = try P256PublicKey(configuredString: "BC3kV9OIDnMu...Nv+XE=")
/// let ok = key.isValidSignature(derSignature, for: Data("message".utf8))
/// ```
public struct P256PublicKey: Sendable {
    let key: EVPKey

    /// OpenSSL's name for P-256.
    package static let curveName = "prime256v1"

    /// Parses the way apps configure a key: PEM text, or Base64 of an X9.63 point or a DER SPKI.
    public init(configuredString text: String) throws(PinStoreError) {
        if text.contains("-----BEGIN") {
            try self.init(pem: text)
            return
        }
        guard let bytes = Base64.decodeStrict(text) else {
            throw PinStoreError(.invalidBase64, "The public key is not valid Base64; configure the Base64 X9.63 point (65 bytes, starting with 0x04) or a PEM/DER SubjectPublicKeyInfo.")
        }
        if bytes.first == 0x30 {
            try self.init(derSubjectPublicKeyInfo: bytes)
        } else {
            try self.init(x963Representation: bytes)
        }
    }

    /// Builds the key from an X9.63 point: 65 bytes uncompressed (`04 || X || Y`) or 33 bytes
    /// compressed (`02`/`03 || X`).
    public init(x963Representation bytes: Data) throws(PinStoreError) {
        switch (bytes.count, bytes.first) {
        case (65, 0x04), (33, 0x02), (33, 0x03):
            break
        case (65, _), (33, _):
            throw PinStoreError(.publicKeyMalformed, "The \(bytes.count)-byte point starts with 0x\(String(bytes.first ?? 0, radix: 16)); an uncompressed P-256 point starts with 0x04, a compressed one with 0x02 or 0x03.")
        default:
            throw PinStoreError(.publicKeyWrongLength, "A P-256 point is 65 bytes (uncompressed) or 33 bytes (compressed), not \(bytes.count); is this a key for another curve, or a truncated value?")
        }
        key = try Self.makeKey(point: bytes)
    }

    /// Builds the key from a DER SubjectPublicKeyInfo.
    public init(derSubjectPublicKeyInfo der: Data) throws(PinStoreError) {
        let parsed: OpaquePointer? = der.withUnsafeBytes { raw in
            var cursor = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard cursor != nil else { return nil }
            let key = d2i_PUBKEY(nil, &cursor, raw.count)
            // Trailing bytes after the structure mean this is not exactly one SPKI.
            if let key, cursor != raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + raw.count {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let parsed else {
            let codes = OpenSSLErrorQueue.drainCodes()
            if codes.contains(where: { $0.library == ERR_LIB_EC && $0.reason == EC_R_POINT_IS_NOT_ON_CURVE }) {
                throw PinStoreError(.publicKeyNotOnCurve, "The SubjectPublicKeyInfo holds a point that is not on the P-256 curve; the key is corrupt or forged.")
            }
            throw PinStoreError(.publicKeyMalformed, "The bytes are not a DER SubjectPublicKeyInfo.")
        }
        key = try Self.checkedP256(EVPKey(taking: parsed))
    }

    /// Builds the key from a PEM `PUBLIC KEY` block.
    public init(pem: String) throws(PinStoreError) {
        guard let block = PEMDocument.firstBlock(in: pem, label: "PUBLIC KEY") else {
            throw PinStoreError(.invalidPEM, "No intact -----BEGIN PUBLIC KEY----- block was found.")
        }
        try self.init(derSubjectPublicKeyInfo: block)
    }

    /// The 65-byte uncompressed X9.63 point `04 || X || Y`.
    public var x963Representation: Data {
        var buffer = [UInt8](repeating: 0, count: 65)
        var length = 0
        // Cannot fail for a valid P-256 key with a 65-byte buffer.
        _ = EVP_PKEY_get_octet_string_param(key.pointer, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &buffer, buffer.count, &length)
        return Data(buffer.prefix(length))
    }

    /// The DER SubjectPublicKeyInfo.
    public var derRepresentation: Data {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(key.pointer, &out)
        guard length > 0, let out else { return Data() }
        defer { openSSLFree(out) }
        return Data(bytes: out, count: Int(length))
    }

    /// The PEM `PUBLIC KEY` block.
    public var pemRepresentation: String {
        PEMDocument.encode(derRepresentation, label: "PUBLIC KEY")
    }

    /// Whether `signature` (ASN.1 DER `ECDSA-Sig-Value`) is a valid ECDSA-SHA256 signature of
    /// `message` by this key. Malformed signature bytes do not verify; they never throw.
    public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
        guard !signature.isEmpty else { return false }
        let ok = signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in
                verify(derSignature: sig, message: msg)
            }
        }
        return ok
    }

    /// Whether `signature` (raw `r || s`, 64 bytes, "P1363") is a valid ECDSA-SHA256 signature
    /// of `message` by this key. Any other length does not verify.
    public func isValidRawSignature(_ signature: Data, for message: Data) -> Bool {
        guard signature.count == 64, let der = Self.derSignature(fromRaw: signature) else { return false }
        return isValidSignature(der, for: message)
    }

    // MARK: - OpenSSL

    private func verify(derSignature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        key.verifySHA256(signature: derSignature, message: message)
    }

    /// Re-encodes raw `r || s` as DER through OpenSSL's `ECDSA_SIG`.
    static func derSignature(fromRaw raw: Data) -> Data? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s): (OpaquePointer?, OpaquePointer?) = raw.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return (BN_bin2bn(base, 32, nil), BN_bin2bn(base + 32, 32, nil))
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            OpenSSLErrorQueue.clear()
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { openSSLFree(out) }
        return Data(bytes: out, count: Int(length))
    }

    private static func makeKey(point: Data) throws(PinStoreError) -> EVPKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL has no EC implementation loaded.")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not prepare to import an EC key.")
        }
        var pkey: OpaquePointer? = nil
        let rc: Int32 = point.withUnsafeBytes { pointBytes in
            curveName.withCString { curve in
                OSSL_PKEY_PARAM_GROUP_NAME.withCString { groupKey in
                    OSSL_PKEY_PARAM_PUB_KEY.withCString { pubKey in
                        var params = [
                            OSSL_PARAM_construct_utf8_string(groupKey, UnsafeMutablePointer(mutating: curve), 0),
                            OSSL_PARAM_construct_octet_string(pubKey, UnsafeMutableRawPointer(mutating: pointBytes.baseAddress), pointBytes.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_PKEY_fromdata(context, &pkey, CPinStoreShims_EVP_PKEY_PUBLIC_KEY(), &params)
                    }
                }
            }
        }
        guard rc == 1, let pkey else {
            let codes = OpenSSLErrorQueue.drainCodes()
            if codes.contains(where: { $0.reason == EC_R_POINT_IS_NOT_ON_CURVE || $0.reason == EC_R_INVALID_ENCODING || $0.reason == EC_R_INVALID_COMPRESSED_POINT }) {
                throw PinStoreError(.publicKeyNotOnCurve, "The point is not on the P-256 curve; the key is corrupt, truncated or for another curve.")
            }
            throw PinStoreError(.publicKeyMalformed, "OpenSSL refused the point as a P-256 public key.")
        }
        return try checkedP256(EVPKey(taking: pkey))
    }

    /// Refuses keys of another type or curve, and points that fail OpenSSL's public-key check.
    private static func checkedP256(_ key: EVPKey) throws(PinStoreError) -> EVPKey {
        guard key.isA("EC") else {
            throw PinStoreError(.publicKeyNotEllipticCurve, "The key is a \(key.typeName) key; the list signature needs an ECDSA P-256 key.")
        }
        guard let group = key.groupName, group == curveName else {
            throw PinStoreError(.publicKeyWrongCurve, "The key is on curve \(key.groupName ?? "unknown"); the list signature needs P-256 (prime256v1).")
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not check the public key.")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else {
            OpenSSLErrorQueue.clear()
            throw PinStoreError(.publicKeyNotOnCurve, "The point is not a valid P-256 public key.")
        }
        return key
    }
}
