import Foundation

/// The bytes a CT log signs for an SCT over a precertificate (RFC 6962 §3.2, `digitally-signed
/// struct` with `entry_type` `precert_entry`), in TLS presentation encoding (RFC 5246 §4):
///
/// ```
/// Version sct_version (v1 = 0)           1 byte
/// SignatureType (certificate_timestamp)  1 byte, 0
/// uint64 timestamp                       8 bytes, big-endian
/// LogEntryType (precert_entry)           2 bytes, 1
/// opaque issuer_key_hash[32]             32 bytes
/// opaque tbs_certificate<1..2^24-1>      3-byte length, then the bytes
/// CtExtensions extensions<0..2^16-1>     2-byte length, then the bytes
/// ```
///
/// `package` so the test kit's log signs exactly what PinStore verifies; OpenSSL's own
/// `SCT_LIST_validate` cross-checks both in the tests.
package enum PrecertificateSignatureInput {
    /// The signed bytes, or nil when `tbsCertificate` is empty or too long for its 24-bit length,
    /// `extensions` too long for its 16-bit one, or `issuerKeyHash` not 32 bytes.
    package static func bytes(timestamp: UInt64, issuerKeyHash: Data, tbsCertificate: Data, extensions: Data) -> Data? {
        guard issuerKeyHash.count == 32, !tbsCertificate.isEmpty, tbsCertificate.count < 1 << 24, extensions.count < 1 << 16 else {
            return nil
        }
        var bytes = Data(capacity: 1 + 1 + 8 + 2 + 32 + 3 + tbsCertificate.count + 2 + extensions.count)
        bytes.append(0)                                   // sct_version v1
        bytes.append(0)                                   // signature_type certificate_timestamp
        withUnsafeBytes(of: timestamp.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [0, 1])                  // entry_type precert_entry
        bytes.append(issuerKeyHash)
        let tbsLength = tbsCertificate.count
        bytes.append(contentsOf: [UInt8(truncatingIfNeeded: tbsLength >> 16), UInt8(truncatingIfNeeded: tbsLength >> 8), UInt8(truncatingIfNeeded: tbsLength)])
        bytes.append(tbsCertificate)
        bytes.append(contentsOf: [UInt8(truncatingIfNeeded: extensions.count >> 8), UInt8(truncatingIfNeeded: extensions.count)])
        bytes.append(extensions)
        return bytes
    }
}
