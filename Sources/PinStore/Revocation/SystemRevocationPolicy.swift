/// What Apple platforms add for a host under a CRL mode: the system's revocation policy
/// (`SecPolicyCreateRevocation`) on the `SecTrust` URLSession hands to
/// `PinStore.handle(_:updateOnEmpty:updateOnMismatch:completionHandler:)`, evaluated with
/// the platform's normal trust evaluation. The pin rules' own CRL step and the signed list's
/// revocations run after it on every platform.
///
/// Kept outside `#if canImport(Security)` so that the mapping is tested on Linux; the values are
/// Security's `kSecRevocation…` flags (`SecPolicy.h`).
enum SystemRevocationPolicy {
    /// `kSecRevocationOCSPMethod | kSecRevocationCRLMethod` (`kSecRevocationUseAnyAvailableMethod`).
    static let anyAvailableMethod: UInt = 1 << 0 | 1 << 1
    /// `kSecRevocationRequirePositiveResponse`: no answer from the CA is a failure.
    static let requirePositiveResponse: UInt = 1 << 3

    /// The revocation flags for `mode`, or nil when the system policy is not added: `off`, and
    /// `reportOnly` (the system's policy can only refuse; the pin rules' CRL step reports).
    static func flags(for mode: CRLCheckMode) -> UInt? {
        switch mode {
        case .off, .reportOnly: nil
        case .enforceSoftFail: anyAvailableMethod
        case .enforceHardFail: anyAvailableMethod | requirePositiveResponse
        }
    }
}
