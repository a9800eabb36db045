/// The verdict on one SCT. Each SCT of a certificate gets its own (unlike OpenSSL's
/// `SCT_LIST_validate`, which answers for the whole list), because CT policies count the SCTs
/// that verify and ignore the others.
enum SCTStatus: Sendable, Equatable {
    /// A known log signed this certificate's precertificate entry at the SCT's timestamp.
    case verified
    /// The log id names no log the caller knows; nothing about the SCT can be checked.
    case unknownLog
    /// The signature does not verify over this certificate and issuer: tampered with, copied from
    /// another certificate, or checked against the wrong issuer.
    case invalidSignature
    /// The timestamp is later than now: a log cannot have seen the certificate in the future.
    case futureTimestamp
    /// Not a v1 SCT, the only version RFC 6962 defines.
    case unsupportedVersion
    /// The SCT names a signature algorithm its log's key cannot produce.
    case unsupportedAlgorithm
}
