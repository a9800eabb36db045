/// A denied key (``PinStore/Configuration/deniedPublicKeys``) anywhere in the validated chain
/// refuses the connection, whatever pin matches. Never relaxed: a denied key is a compromised
/// key or an interception product, never a rotation. A leaf alone cannot show the keys above
/// it, so a leaf-only adapter refuses whenever deny pins are configured.
final class DeniedKeyRule: PinningRule {
    let denied: [Digest32]

    init(denied: [Digest32]) {
        self.denied = denied
    }

    func check(_ connection: PinningContext) -> PinningRuleResult {
        guard !denied.isEmpty else { return .meetsRule }
        switch connection.evidence.deniedDepth(denied) {
        case nil:
            return .meetsRule
        case .some(let depth?):
            return .failsRule(.deniedKey(depth: depth), enforcing: true, relaxable: false)
        case .some(nil):
            return .failsRule(.issuerPinsNeedChain, enforcing: true, relaxable: false)
        }
    }

    /// None: deny pins refuse for every host alike.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {}
}
