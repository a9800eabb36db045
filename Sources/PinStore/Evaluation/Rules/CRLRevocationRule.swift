import Foundation

/// The CRL step of ``PinningRules``, after the list's revocations, before CT: a host under a
/// CRL mode (the signed list's `crl` section or ``PinStore/Configuration/crlMode``) needs every
/// certificate of its validated chain that names an http CRL distribution point to be absent
/// from a current CRL its issuer signed. Reads cached CRLs only (the adapter fetched what was
/// missing, within the budget, before deciding); a revoked certificate is refused when
/// enforced, an unavailable CRL refused only under ``CRLCheckMode/enforceHardFail``; the rest
/// is reported while the later rules still decide. Never relaxed.
final class CRLRevocationRule: PinningRule {
    let checker: CRLChecker

    init(checker: CRLChecker) {
        self.checker = checker
    }

    func check(_ connection: PinningContext) -> PinningRuleResult {
        checker.check(connection)
    }

    /// The hosts the signed list's `crl` section names.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
        checker.singledOutHosts(tables.crl, into: &names)
    }
}
