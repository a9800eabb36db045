import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// Owns one OpenSSL `STACK_OF(SCT)` and frees it, with every SCT in it, with the object. Used
/// only inside one function.
final class SCTList {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        CPinStoreShims_sk_SCT_pop_free(pointer)
    }

    /// How many SCTs the list holds.
    var count: Int {
        Int(max(0, CPinStoreShims_sk_SCT_num(pointer)))
    }

    /// The SCTs, read into values, in list order.
    var timestamps: [SignedCertificateTimestamp] {
        (0..<Int32(clamping: count)).compactMap { index in
            CPinStoreShims_sk_SCT_value(pointer, index).map(SignedCertificateTimestamp.init(reading:))
        }
    }

    /// Parses a TLS-encoded `SignedCertificateTimestampList` (RFC 6962 §3.3: the contents of the
    /// extension's inner OCTET STRING) with OpenSSL's `o2i_SCT_LIST`.
    ///
    /// - Throws: ``CertificateTransparencyError/truncatedSCTList`` when the bytes end before
    ///   the list's 2-byte length says, ``CertificateTransparencyError/malformedSCTList`` for any
    ///   other refusal.
    static func parse(_ bytes: Data) throws(CertificateTransparencyError) -> SCTList {
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let list = o2i_SCT_LIST(nil, &cursor, raw.count) else { return nil }
            // o2i_SCT_LIST reads exactly the length it is given or fails; this is a backstop.
            guard cursor == base + raw.count else {
                CPinStoreShims_sk_SCT_pop_free(list)
                return nil
            }
            return list
        }
        guard let parsed else {
            OpenSSLErrorQueue.clear()
            throw classifyRefusal(bytes)
        }
        return SCTList(taking: parsed)
    }

    /// Why OpenSSL refused `bytes` as an SCT list. OpenSSL reports both cases as
    /// `CT_R_SCT_LIST_INVALID`; the list's own 2-byte length prefix (RFC 6962 §3.3) tells a cut
    /// list from a malformed one, for an error message that points at the right cause.
    private static func classifyRefusal(_ bytes: Data) -> CertificateTransparencyError {
        let prefix = Array(bytes.prefix(2))
        guard prefix.count == 2 else { return .truncatedSCTList }
        let declared = Int(prefix[0]) << 8 | Int(prefix[1])
        return declared > bytes.count - 2 ? .truncatedSCTList : .malformedSCTList
    }
}
