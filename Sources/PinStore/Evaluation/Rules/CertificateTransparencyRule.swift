import Foundation

/// Step 1b of ``PinningRules``: a host that asks for Certificate Transparency (the signed
/// list, the configuration's default or an ATS exception) needs a leaf whose embedded SCTs
/// comply with the profile. After the trust evaluation and the expected hosts, before any pin,
/// so a CT refusal is reported as such. Enforced failures are never relaxed; report-only ones
/// are recorded while the pins still decide.
final class CertificateTransparencyRule: PinningRule {
    let checker: CertificateTransparencyChecker

    init(checker: CertificateTransparencyChecker) {
        self.checker = checker
    }

    func check(_ connection: PinningContext) -> PinningRuleResult {
        checker.check(connection)
    }

    /// The hosts the signed list's CT section names and the ATS exceptions' domains: a host
    /// under CT behind a wildcard leaf must be decided as itself.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
        checker.singledOutHosts(tables.certificateTransparency, into: &names)
    }
}
