import Foundation

/// Whether a host's validated chain is checked against its CAs' certificate revocation lists
/// (CRLs), and what happens when a CRL cannot be had (see <doc:Revocation>).
///
/// The signed list's `crl` section names a mode per host or pattern;
/// ``PinStore/Configuration/crlMode`` is the mode of every other host (default ``off``).
///
/// | mode | revoked | CRL unavailable |
/// | --- | --- | --- |
/// | ``off`` | not looked at | not looked at |
/// | ``reportOnly`` | reported, allowed | reported, allowed |
/// | ``enforce`` | refused | reported, allowed (fails open) |
/// | ``enforceHardFail`` | refused | refused |
///
/// "Unavailable" covers a CRL that could not be fetched within
/// ``PinStore/Configuration/crlFetchBudget``, and one that was fetched but cannot be trusted
/// (bad signature, another issuer, expired, too large, a delta or indirect CRL): never "not
/// revoked".
public enum CRLCheckMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// No CRL check.
    case off
    /// The whole check runs; a revoked certificate or a missing CRL is reported (metrics,
    /// decision stream, pin-failure report) and the later rules still decide.
    case reportOnly
    /// A revoked certificate is refused; an unavailable CRL is reported and the connection goes
    /// on (soft fail, as browsers did with online checks).
    case enforce
    /// A revoked certificate is refused, and so is a chain whose CRLs cannot be had within the
    /// budget (hard fail: an attacker who blocks the CA's CRL server blocks the host too).
    case enforceHardFail
}
