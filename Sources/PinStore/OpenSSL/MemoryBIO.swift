import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// Frees memory that OpenSSL allocated for us (`OPENSSL_free` is a macro).
package func openSSLFree(_ pointer: UnsafeMutableRawPointer?) {
    CPinStoreShims_OPENSSL_free(pointer)
}

/// Owns one memory `BIO` and frees it with the object. Used only inside one function.
package final class MemoryBIO {
    package let pointer: OpaquePointer

    /// A read-only BIO over a copy of `bytes` (OpenSSL may read after the caller's buffer moves).
    package init?(reading bytes: Data) {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        pointer = bio
        let written = bytes.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress, raw.count > 0 else { return 0 }
            return BIO_write(bio, base, Int32(clamping: raw.count))
        }
        guard written == Int32(clamping: bytes.count) else { return nil }
    }

    /// An empty writable BIO.
    package init?() {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        pointer = bio
    }

    deinit {
        BIO_free(pointer)
    }

    /// Everything written so far.
    package var contents: Data {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = CPinStoreShims_BIO_get_mem_data(pointer, &data)
        guard length > 0, let data else { return Data() }
        return Data(bytes: data, count: length)
    }
}

/// PEM (RFC 7468) through OpenSSL's reader and writer.
enum PEMDocument {
    /// Every block in `text`, in order, as (label, DER). Text outside blocks is ignored, as
    /// RFC 7468 allows ("explanatory text"); a damaged block throws `invalidPEM`.
    static func blocks(in text: String) throws(PinStoreError) -> [(label: String, der: Data)] {
        guard let bio = MemoryBIO(reading: Data(text.utf8)) else {
            throw OpenSSLErrorQueue.error(.openSSLFailure, "OpenSSL could not allocate a buffer.")
        }
        var blocks: [(String, Data)] = []
        while true {
            var name: UnsafeMutablePointer<CChar>? = nil
            var header: UnsafeMutablePointer<CChar>? = nil
            var data: UnsafeMutablePointer<UInt8>? = nil
            var length = 0
            let rc = PEM_read_bio(bio.pointer, &name, &header, &data, &length)
            defer {
                openSSLFree(name)
                openSSLFree(header)
                openSSLFree(data)
            }
            if rc != 1 {
                let codes = OpenSSLErrorQueue.drainCodes()
                // "No start line" after at least one pass is the normal end of input.
                if codes.allSatisfy({ $0.library == ERR_LIB_PEM && $0.reason == PEM_R_NO_START_LINE }) {
                    return blocks
                }
                throw PinStoreError(.invalidPEM, "PEM block \(blocks.count + 1) is damaged (bad Base64, a missing END line, or a truncated file).")
            }
            let label = name.map { String(cString: $0) } ?? ""
            let der = data.map { Data(bytes: $0, count: length) } ?? Data()
            blocks.append((label, der))
        }
    }

    /// The DER of the first intact block labelled `label`, or nil.
    static func firstBlock(in text: String, label: String) -> Data? {
        guard let blocks = try? blocks(in: text) else { return nil }
        return blocks.first { $0.label == label }?.der
    }

    /// `der` as a PEM block.
    static func encode(_ der: Data, label: String) -> String {
        guard let bio = MemoryBIO() else { return "" }
        let rc = der.withUnsafeBytes { raw in
            PEM_write_bio(bio.pointer, label, "", raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard rc > 0 else {
            OpenSSLErrorQueue.clear()
            return ""
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }
}
