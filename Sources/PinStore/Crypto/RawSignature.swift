import Foundation
internal import COpenSSL

/// Conversions between DER ECDSA signatures and raw `r || s` (P1363), through OpenSSL.
enum RawSignature {
    /// The 64-byte `r || s` form of a DER P-256 signature, or nil when `der` is not one.
    static func fromDER(_ der: Data) -> Data? {
        der.withUnsafeBytes { raw -> Data? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, raw.count) else {
                OpenSSLErrorQueue.clear()
                return nil
            }
            defer { ECDSA_SIG_free(signature) }
            var output = [UInt8](repeating: 0, count: 64)
            guard BN_bn2binpad(ECDSA_SIG_get0_r(signature), &output, 32) == 32,
                  output.withUnsafeMutableBufferPointer({ BN_bn2binpad(ECDSA_SIG_get0_s(signature), $0.baseAddress! + 32, 32) }) == 32 else {
                OpenSSLErrorQueue.clear()
                return nil
            }
            return Data(output)
        }
    }
}
