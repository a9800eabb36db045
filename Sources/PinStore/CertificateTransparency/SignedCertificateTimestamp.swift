import Foundation
internal import COpenSSL

/// One signed certificate timestamp (RFC 6962 §3.2) as OpenSSL read it from a certificate's
/// embedded SCT list: a log's promise to publish the certificate.
///
/// Values are kept as read, so a caller can report what a certificate carried even when the SCT
/// does not verify.
struct SignedCertificateTimestamp: Sendable, Equatable {
    /// The SCT version byte: 0 is v1, the only version RFC 6962 defines. For other versions
    /// OpenSSL keeps the bytes opaque, and every field below is empty or zero.
    let version: UInt8
    /// The log id (SHA-256 of the log's key), as read; 32 bytes in a v1 SCT.
    let logID: Data
    /// When the log saw the certificate, in milliseconds since the Unix epoch (RFC 6962's unit).
    let timestamp: UInt64
    /// The SCT's `extensions` bytes, as read (static-ct-api logs put a `leaf_index` here).
    let extensions: Data
    /// The TLS `HashAlgorithm` (4 = SHA-256).
    let hashAlgorithm: UInt8
    /// The TLS `SignatureAlgorithm` (1 = RSA, 3 = ECDSA).
    let signatureAlgorithm: UInt8
    /// The signature bytes (DER for ECDSA).
    let signature: Data

    /// The version number of RFC 6962 v1 SCTs.
    static let v1: UInt8 = 0

    /// An SCT from its fields (tests of the profiles, which judge SCTs already checked).
    init(version: UInt8 = 0, logID: Data, timestamp: UInt64, extensions: Data = Data(), hashAlgorithm: UInt8 = 4,
         signatureAlgorithm: UInt8 = 3, signature: Data = Data()) {
        self.version = version
        self.logID = logID
        self.timestamp = timestamp
        self.extensions = extensions
        self.hashAlgorithm = hashAlgorithm
        self.signatureAlgorithm = signatureAlgorithm
        self.signature = signature
    }

    /// Reads an SCT through OpenSSL's getters. The pointer is only borrowed.
    init(reading sct: OpaquePointer) {
        let version = SCT_get_version(sct)
        self.version = UInt8(truncatingIfNeeded: version.rawValue)
        guard version == SCT_VERSION_V1 else {
            // OpenSSL does not parse SCTs of other versions: nothing more to read.
            (logID, timestamp, extensions, hashAlgorithm, signatureAlgorithm, signature) = (Data(), 0, Data(), 0, 0, Data())
            return
        }
        logID = Self.bytes { SCT_get0_log_id(sct, &$0) }
        timestamp = SCT_get_timestamp(sct)
        extensions = Self.bytes { SCT_get0_extensions(sct, &$0) }
        signature = Self.bytes { SCT_get0_signature(sct, &$0) }
        // OpenSSL has no getter for the two algorithm bytes, but o2i_SCT refuses a v1 SCT whose
        // pair is not one of these two (CT_R_SCT_INVALID_SIGNATURE), so the NID names exactly the
        // pair that was read.
        switch SCT_get_signature_nid(sct) {
        case NID_ecdsa_with_SHA256: (hashAlgorithm, signatureAlgorithm) = (4, 3)
        case NID_sha256WithRSAEncryption: (hashAlgorithm, signatureAlgorithm) = (4, 1)
        default: (hashAlgorithm, signatureAlgorithm) = (0, 0)
        }
    }

    /// Copies the bytes a `SCT_get0_*` getter points at (they live only as long as the SCT).
    private static func bytes(_ getter: (inout UnsafeMutablePointer<UInt8>?) -> Int) -> Data {
        var pointer: UnsafeMutablePointer<UInt8>? = nil
        let count = getter(&pointer)
        guard count > 0, let pointer else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// OpenSSL's NID for this SCT's signature algorithm pair, or `NID_undef`.
    var signatureNID: Int32 {
        switch (hashAlgorithm, signatureAlgorithm) {
        case (4, 3): NID_ecdsa_with_SHA256
        case (4, 1): NID_sha256WithRSAEncryption
        default: NID_undef
        }
    }
}
