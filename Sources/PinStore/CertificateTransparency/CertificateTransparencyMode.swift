import Foundation

/// Whether a host's certificates must be logged in Certificate Transparency (CT): the
/// embedded signed certificate timestamps (SCTs) of the leaf, checked against the logs the
/// team's signed list names (see <doc:CertificateTransparency>).
///
/// The signed list names a mode per host or pattern; ``PinStore/Configuration/certificateTransparency``
/// is the mode of every other host, and an ATS exception with `NSRequiresCertificateTransparency`
/// (``TransportSecurityException/requiresCertificateTransparency``) enforces it for its domain
/// whatever the list says.
///
/// A closed set: off, reported or enforced, as for pins.
public enum CertificateTransparencyMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// No CT check.
    case off
    /// The whole check runs; a certificate that falls short is reported (metrics, decision
    /// stream, pin-failure report) and the connection goes on, as with report-only pins.
    case reportOnly
    /// A certificate that falls short of the profile is refused.
    case enforce

    /// The stricter of two modes.
    func raised(to other: CertificateTransparencyMode) -> CertificateTransparencyMode {
        switch (self, other) {
        case (.enforce, _), (_, .enforce): .enforce
        case (.reportOnly, _), (_, .reportOnly): .reportOnly
        default: .off
        }
    }
}

/// Which CT compliance rules a certificate's SCTs are judged by.
///
/// | | Chrome (default) | Apple |
/// | --- | --- | --- |
/// | SCTs, lifetime up to 180 days | 2, from distinct logs | 2, at most 1 per operator counts |
/// | SCTs, longer lifetime | 3, from distinct logs | 3, at most 2 per operator count |
/// | operators | at least 2 distinct among the counted SCTs | (the per-operator cap) |
/// | also | one SCT from a log usable now (qualified, usable or read-only) | one SCT from an RFC 6962 log; the log's temporal interval must hold the leaf's expiry |
///
/// Both: a log counts while qualified, usable, read-only or retired (a retired log's SCT only
/// when issued before the retirement); pending, rejected and states PinStore does not know
/// never count. A leaf's lifetime is its `notAfter` minus its `notBefore`.
///
/// A closed set for the signed list's format: the list names a profile by this raw value and
/// a store refuses a list naming one it does not know, so another profile (Mozilla's) is a new
/// list format and comes with a breaking release.
public enum CertificateTransparencyProfile: String, Sendable, Hashable, CaseIterable, Codable {
    /// Chrome's CT policy (GoogleChrome/CertificateTransparency `ct_policy.md`).
    case chrome
    /// Apple's CT policy (support.apple.com/103214).
    case apple
}
