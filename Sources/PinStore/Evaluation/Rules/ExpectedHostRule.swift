/// A host outside ``PinStore/Configuration/expectedCommonNames`` is refused, whatever its pins:
/// the app's own closed list of hosts. Never relaxed.
final class ExpectedHostRule: PinningRule {
    /// The expected names as ``HostName`` texts; nil: every host may be expected.
    let expected: Set<String>?

    init(expected: Set<String>?) {
        self.expected = expected
    }

    func check(_ connection: PinningContext) -> PinningRuleResult {
        guard let expected, !expected.contains(connection.host.text) else { return .meetsRule }
        return .failsRule(.hostNotExpected, enforcing: true, relaxable: false)
    }

    /// The expected names: each is allowed where its neighbours are refused.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
        if let expected { names.formUnion(expected) }
    }
}
