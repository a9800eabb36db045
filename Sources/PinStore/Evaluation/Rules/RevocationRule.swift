/// Step 0b of ``PinningRules``: a certificate the signed list revokes (its key, the certificate,
/// or its issuer key and serial number; ``ListRevocations``), anywhere in the validated chain,
/// refuses the connection. Right after the trust evaluation and before every other rule, so a
/// revoked chain is refused as revoked whatever else is true of it. Never relaxed: report-only
/// mode and a domainsConfig exemption let a pin failure through, never a certificate the team
/// has revoked (a CA pin accepts every certificate of that CA, the stolen one included, which is
/// exactly what this rule exists to stop).
///
/// A leaf alone (AsyncHTTPClient) is refused as revoked when it matches an entry, and refused
/// with ``PinningFailure/Reason/revocationsNeedChain`` when an entry might match a certificate
/// above it that it cannot see: never skipped.
final class RevocationRule: PinningRule {
    func check(_ connection: PinningContext) -> PinningRuleResult {
        guard let revocations = connection.revocations, !revocations.isEmpty else { return .meetsRule }
        switch revocations.verdict(for: connection.evidence) {
        case .notRevoked:
            return .meetsRule
        case .revoked(let match):
            return .failsRule(.revokedByList(match), enforcing: true, relaxable: false)
        case .cannotTell:
            return .failsRule(.revocationsNeedChain, enforcing: true, relaxable: false)
        }
    }

    /// None: a revocation refuses for every host alike.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {}
}
