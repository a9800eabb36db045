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
/// | ``enforceSoftFail`` | refused | reported, allowed (fails open) |
/// | ``enforceHardFail`` | refused | refused |
///
/// "Unavailable" covers a CRL that could not be fetched within
/// ``PinStore/Configuration/crlFetchBudget``, and one that was fetched but cannot be trusted
/// (bad signature, another issuer, expired, too large, a delta or indirect CRL): never "not
/// revoked".
///
/// Both enforcing modes name what they do when the CRL cannot be had, since that is where they
/// differ: `enforceSoftFail` lets the connection through ("revocation status unknown", reported
/// as ``PinningDecision/reportOnly(_:validatedChain:)``), `enforceHardFail` refuses it. The list's
/// `crl` section spells them the same way; the former spelling `"enforce"` is refused there with
/// a message naming both (renamed in 0.1.0).
public enum CRLCheckMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// No CRL check.
    case off
    /// The whole check runs; a revoked certificate or a missing CRL is reported (metrics,
    /// decision stream, pin-failure report) and the later rules still decide.
    case reportOnly
    /// A revoked certificate is refused; an unavailable CRL is reported and the connection goes
    /// on (soft fail, as browsers did with online checks): the decision is
    /// ``PinningDecision/reportOnly(_:validatedChain:)`` with a ``PinningFailure/Reason/crlCheckFailed(_:)``
    /// whose failure is not ``CRLCheckFailure/isRevoked``.
    case enforceSoftFail
    /// A revoked certificate is refused, and so is a chain whose CRLs cannot be had within the
    /// budget (hard fail: an attacker who blocks the CA's CRL server blocks the host too).
    case enforceHardFail

    /// The former name of ``enforceSoftFail``: it refuses a revoked certificate but lets the
    /// connection through when the CRL cannot be had, which "enforce" did not say.
    @available(*, deprecated, renamed: "enforceSoftFail", message: "enforce fails open when the CRL cannot be had; say so with enforceSoftFail, or refuse with enforceHardFail")
    public static var enforce: CRLCheckMode { .enforceSoftFail }

    /// What a mode that does not parse should have been: every mode's name, and for the retired
    /// `"enforce"` which of the two it meant.
    static func expected(for text: String) -> String {
        let names = allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard text == "enforce" else { return "one of \(names)" }
        return "one of \(names) (\"enforce\" was renamed: \"enforceSoftFail\" lets the connection through when the CRL cannot be had, "
            + "as \"enforce\" did; \"enforceHardFail\" refuses it)"
    }
}
