import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// Checks the SCTs a certificate embeds (RFC 6962 §3.3, extension 1.3.6.1.4.1.11129.2.4.2)
/// through the system OpenSSL, one verdict per SCT.
///
/// OpenSSL's own `SCT_LIST_validate` is not used: it answers for the whole list (one bad SCT
/// fails all), loads logs only from a file, and rebuilds the precertificate once per SCT. Here
/// OpenSSL parses the list and re-encodes the TBSCertificate once per leaf, the signed struct is
/// built in Swift (``PrecertificateSignatureInput``), and each SCT is checked with the log's
/// cached ``CTLogKey``.
///
/// ```swift
/// let evidence = try EmbeddedSCTs.check(leaf: chain[0], issuer: chain[1],
///                                       logKey: { logs[$0] }, nowMilliseconds: now)
/// let verified = evidence.checks.filter { $0.status == .verified }
/// ```
enum EmbeddedSCTs {
    /// The most SCTs a certificate may embed. Certificates carry 2 to 5 (browser policies ask for
    /// 2 or 3), and each SCT from a known log costs a signature check: a cap keeps a hostile
    /// certificate (64 KB fits a thousand SCTs) from turning one handshake into a thousand checks.
    static let maximumSCTs = 64

    /// Reads and checks the SCTs embedded in `leaf`.
    ///
    /// - Parameters:
    ///   - leaf: The leaf certificate, DER.
    ///   - issuer: The certificate that issued `leaf`, DER: SCTs sign the hash of its key.
    ///   - logKey: The key of the log with a given id, or nil for a log the caller does not know.
    ///   - nowMilliseconds: The current time in milliseconds since the Unix epoch; SCTs later than
    ///     this are ``SCTStatus/futureTimestamp``.
    /// - Returns: A check per SCT in certificate order (none when the leaf embeds no list) and
    ///   the leaf's validity period.
    /// - Throws: ``CertificateTransparencyError`` when the certificates or the list cannot be read.
    static func check(leaf: Data, issuer: Data, logKey: (Digest32) -> CTLogKey?, nowMilliseconds: UInt64) throws(CertificateTransparencyError) -> EmbeddedSCTEvidence {
        let leafHandle: X509Handle
        do {
            leafHandle = try X509Handle(der: leaf)
        } catch {
            throw .leafUnreadable
        }
        guard let notBefore = X509Handle.seconds(X509_get0_notBefore(leafHandle.pointer)),
              let notAfter = X509Handle.seconds(X509_get0_notAfter(leafHandle.pointer)) else {
            throw .leafUnreadable
        }
        guard let list = try embeddedList(leafHandle) else {
            return EmbeddedSCTEvidence(checks: [], leafNotBefore: notBefore, leafNotAfter: notAfter)
        }
        guard list.count <= maximumSCTs else { throw .tooManySCTs(count: list.count) }
        let timestamps = list.timestamps
        let issuerKeyHash = try Self.issuerKeyHash(issuer)

        // The precertificate's TBS is the same for every SCT: rebuilt at most once, and only
        // when an SCT gets as far as a signature check.
        var tbs: Data? = nil
        var checks: [SCTCheck] = []
        checks.reserveCapacity(timestamps.count)
        for sct in timestamps {
            guard sct.version == SignedCertificateTimestamp.v1 else {
                checks.append(SCTCheck(sct: sct, status: .unsupportedVersion))
                continue
            }
            guard let id = Digest32(sct.logID), let key = logKey(id) else {
                checks.append(SCTCheck(sct: sct, status: .unknownLog))
                continue
            }
            guard sct.timestamp <= nowMilliseconds else {
                checks.append(SCTCheck(sct: sct, status: .futureTimestamp))
                continue
            }
            guard sct.signatureNID == key.signatureNID else {
                checks.append(SCTCheck(sct: sct, status: .unsupportedAlgorithm))
                continue
            }
            if tbs == nil { tbs = try precertificateTBS(leafHandle) }
            guard let tbs, let signed = PrecertificateSignatureInput.bytes(timestamp: sct.timestamp, issuerKeyHash: issuerKeyHash,
                                                                          tbsCertificate: tbs, extensions: sct.extensions) else {
                // Only an impossible length gets here (a leaf over 16 MB, an extension over 64 KB):
                // nothing that could have been signed.
                checks.append(SCTCheck(sct: sct, status: .invalidSignature))
                continue
            }
            let valid = key.verify(signature: sct.signature, over: signed)
            checks.append(SCTCheck(sct: sct, status: valid ? .verified : .invalidSignature))
        }
        return EmbeddedSCTEvidence(checks: checks, leafNotBefore: notBefore, leafNotAfter: notAfter)
    }

    /// Parses a raw TLS-encoded SCT list (the contents of the extension's inner OCTET STRING),
    /// for the fuzz target and for tools that read a list on its own.
    ///
    /// - Throws: ``CertificateTransparencyError/truncatedSCTList``,
    ///   ``CertificateTransparencyError/malformedSCTList``, or
    ///   ``CertificateTransparencyError/tooManySCTs(count:)``.
    static func parseList(_ bytes: Data) throws(CertificateTransparencyError) -> [SignedCertificateTimestamp] {
        let list = try SCTList.parse(bytes)
        guard list.count <= maximumSCTs else { throw .tooManySCTs(count: list.count) }
        return list.timestamps
    }

    // MARK: - OpenSSL

    /// The leaf's SCT list, nil when it has none.
    private static func embeddedList(_ leaf: X509Handle) throws(CertificateTransparencyError) -> SCTList? {
        var critical: Int32 = 0
        if let raw = X509_get_ext_d2i(leaf.pointer, NID_ct_precert_scts, &critical, nil) {
            return SCTList(taking: OpaquePointer(raw))
        }
        // X509_get_ext_d2i answers nil for three reasons, told apart by `critical`: -1 no such
        // extension, -2 more than one, otherwise the one there did not decode.
        switch critical {
        case -1:
            OpenSSLErrorQueue.clear()
            return nil
        case -2:
            OpenSSLErrorQueue.clear()
            throw .duplicatedSCTExtension
        default:
            OpenSSLErrorQueue.clear()
            throw refusalOfExtension(leaf)
        }
    }

    /// Why the leaf's one SCT list extension did not decode: its value is read again, the outer
    /// OCTET STRING with OpenSSL's DER reader and the list inside with ``SCTList/parse(_:)``, so
    /// a cut extension is told from a malformed one.
    private static func refusalOfExtension(_ leaf: X509Handle) -> CertificateTransparencyError {
        let index = X509_get_ext_by_NID(leaf.pointer, NID_ct_precert_scts, -1)
        guard index >= 0, let certificateExtension = X509_get_ext(leaf.pointer, index),
              let value = X509_EXTENSION_get_data(certificateExtension) else {
            OpenSSLErrorQueue.clear()
            return .malformedSCTList
        }
        let outer = bytes(of: value)
        let inner: Data? = outer.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let octets = d2i_ASN1_OCTET_STRING(nil, &cursor, raw.count) else { return nil }
            defer { ASN1_OCTET_STRING_free(octets) }
            return bytes(of: UnsafePointer(octets))
        }
        guard let inner else {
            // A DER length running past the end of the value: a cut extension.
            let codes = OpenSSLErrorQueue.drainCodes()
            let cut = codes.contains { $0.library == ERR_LIB_ASN1 && ($0.reason == ASN1_R_TOO_LONG || $0.reason == ASN1_R_HEADER_TOO_LONG) }
            return cut ? .truncatedSCTList : .malformedSCTList
        }
        do {
            _ = try SCTList.parse(inner)
            // The list parses on its own, so OpenSSL refused something around it.
            return .malformedSCTList
        } catch {
            return error
        }
    }

    /// A copy of an ASN.1 string's bytes (an empty string may have no buffer at all).
    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> Data {
        let count = Int(ASN1_STRING_length(string))
        guard count > 0, let data = ASN1_STRING_get0_data(string) else { return Data() }
        return Data(bytes: data, count: count)
    }

    /// SHA-256 of the issuer's DER SubjectPublicKeyInfo (RFC 6962 §3.2 `issuer_key_hash`).
    private static func issuerKeyHash(_ issuer: Data) throws(CertificateTransparencyError) -> Data {
        let handle: X509Handle
        do {
            handle = try X509Handle(der: issuer)
        } catch {
            throw .issuerUnreadable
        }
        let spki = handle.subjectPublicKeyInfo
        let hash = SHA256Digest.hash(spki)
        guard !spki.isEmpty, hash.count == SHA256Digest.byteCount else { throw .issuerUnreadable }
        return hash
    }

    /// The precertificate's TBSCertificate as the log signed it: the leaf's, with the SCT list
    /// extension removed and the rest re-encoded by OpenSSL (`i2d_re_X509_tbs`), which is the
    /// precertificate's TBS without its poison extension (RFC 6962 §3.1).
    ///
    /// Changes `leaf` (the extension is deleted): the handle is this check's own parse, read
    /// for nothing else afterwards, so no `X509_dup` copy is needed.
    private static func precertificateTBS(_ leaf: X509Handle) throws(CertificateTransparencyError) -> Data {
        let index = X509_get_ext_by_NID(leaf.pointer, NID_ct_precert_scts, -1)
        guard index >= 0, let removed = X509_delete_ext(leaf.pointer, index) else {
            OpenSSLErrorQueue.clear()
            throw .precertificateNotRebuilt
        }
        X509_EXTENSION_free(removed)
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_re_X509_tbs(leaf.pointer, &out)
        guard length > 0, let out else {
            OpenSSLErrorQueue.clear()
            throw .precertificateNotRebuilt
        }
        defer { openSSLFree(out) }
        return Data(bytes: out, count: Int(length))
    }
}
