import Foundation
internal import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's generator.
enum RandomBytes {
    static func generate(_ count: Int) throws(PinStoreError) -> Data {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL's random generator failed.")
        }
        return Data(bytes)
    }
}
