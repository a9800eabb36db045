import Foundation
internal import COpenSSL

/// SHA-256, computed by the system OpenSSL.
public enum SHA256Digest {
    /// The number of bytes in a SHA-256 digest.
    public static let byteCount = 32

    /// The SHA-256 digest of `bytes`.
    public static func hash<Bytes: DataProtocol>(_ bytes: Bytes) -> Data {
        var digest = Data(count: byteCount)
        let ok: Bool = digest.withUnsafeMutableBytes { out in
            if let contiguous = bytes.withContiguousStorageIfAvailable({ input in
                digestOneShot(UnsafeRawBufferPointer(input), into: out)
            }) {
                return contiguous
            }
            let copy = Array(bytes)
            return copy.withUnsafeBytes { digestOneShot($0, into: out) }
        }
        // EVP_Digest can only fail when memory runs out or the provider is missing; both are
        // fatal conditions for the process that no input can cause.
        guard ok else {
            OpenSSLErrorQueue.clear()
            return Data()
        }
        return digest
    }

    private static func digestOneShot(_ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        var length: UInt32 = 0
        let rc = EVP_Digest(input.baseAddress, input.count,
                            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                            PrefetchedAlgorithms.shared.sha256, nil)
        return rc == 1 && length == UInt32(byteCount)
    }
}

/// Algorithms fetched from the OpenSSL provider once, because an implicit fetch on every
/// call (`EVP_sha256()` inside `EVP_Digest`) costs more than hashing a certificate.
package final class PrefetchedAlgorithms: @unchecked Sendable {
    // Safe to share: an EVP_MD fetched once is immutable and reference counted by OpenSSL.
    package let sha256: OpaquePointer

    package static let shared = PrefetchedAlgorithms()

    private init() {
        if let fetched = EVP_MD_fetch(nil, "SHA256", nil) {
            sha256 = fetched
        } else {
            // Fall back to the legacy constant, which performs the fetch lazily.
            sha256 = EVP_sha256()
        }
    }
}
