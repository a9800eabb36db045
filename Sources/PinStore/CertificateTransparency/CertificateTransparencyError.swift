/// Why a certificate's embedded SCTs could not be checked at all (as opposed to an SCT that was
/// read and did not verify, which is an ``SCTStatus``). A CT policy refuses such a certificate
/// as carrying no valid SCT; the description says what was wrong.
enum CertificateTransparencyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The leaf is not exactly one DER X.509 certificate, or its validity dates cannot be read.
    case leafUnreadable
    /// The issuer is not exactly one DER X.509 certificate with a readable public key.
    case issuerUnreadable
    /// The SCT list extension (or a raw SCT list) is not a well-formed list: not an OCTET STRING,
    /// a bad length inside, an SCT with an algorithm OpenSSL does not know, or trailing bytes.
    case malformedSCTList
    /// The SCT list ends before its own length prefix says it does.
    case truncatedSCTList
    /// The leaf carries the SCT list extension more than once; RFC 5280 §4.2 forbids repeating an
    /// extension, and picking one of them would let the other decide nothing.
    case duplicatedSCTExtension
    /// The list holds more SCTs than ``EmbeddedSCTs/maximumSCTs``.
    case tooManySCTs(count: Int)
    /// OpenSSL could not re-encode the leaf's TBSCertificate: not explained by the input (out of
    /// memory), but never a verdict on the SCTs either.
    case precertificateNotRebuilt

    var description: String {
        switch self {
        case .leafUnreadable:
            "The leaf certificate could not be read (not exactly one DER X.509 certificate, or unreadable validity dates); its SCTs cannot be checked."
        case .issuerUnreadable:
            "The issuer certificate could not be read; embedded SCTs are signed over the issuer's key hash, so they cannot be checked without it. Pass the certificate that issued the leaf."
        case .malformedSCTList:
            "The embedded SCT list is malformed (not an OCTET STRING holding a TLS-encoded list of v1 SCTs with known algorithms); the certificate carries no usable SCT."
        case .truncatedSCTList:
            "The embedded SCT list is shorter than its length prefix says: the extension was truncated; the certificate carries no usable SCT."
        case .duplicatedSCTExtension:
            "The leaf carries the SCT list extension (1.3.6.1.4.1.11129.2.4.2) more than once, which RFC 5280 forbids; the certificate is refused rather than one list picked."
        case .tooManySCTs(let count):
            "The leaf embeds \(count) SCTs, more than the \(EmbeddedSCTs.maximumSCTs) checked at most (certificates carry 2 to 5); checking them all would let one certificate cost a handshake a signature check per SCT."
        case .precertificateNotRebuilt:
            "OpenSSL could not re-encode the leaf's TBSCertificate to rebuild the precertificate entry (out of memory?); the SCTs were not checked."
        }
    }
}
