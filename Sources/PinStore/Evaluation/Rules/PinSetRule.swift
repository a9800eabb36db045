/// The pins: a connection is allowed when at least one unexpired pin that applies to the host
/// matches, the signed list's, the fallback's and the static policies' together (one pin set).
/// Pins apply, none matches: a pin mismatch (or, for a leaf alone that cannot prove an issuer
/// pin, ``PinningFailure/Reason/issuerPinsNeedChain``). Nothing applies: the host has no pins
/// (an expired policy no longer applies: a clock moved forward must not open hosts).
///
/// Report-only may relax these failures: the list's pins and hosts without pins are enforced
/// unless ``PinStore/Configuration/enforcement`` says otherwise, a policy unless it is
/// ``PinPolicy/reportOnly``; any enforcing source enforces.
struct PinSetRule: PinningRule {
    let policies: [CompiledPolicy]
    /// Whether the list's pins (downloaded and fallback), and hosts without pins, enforce.
    let listEnforced: Bool

    func check(_ connection: PinningContext) -> PinningRuleResult {
        let host = connection.host.text
        var listApplies = false
        var unprovable = false
        for index in [connection.list, connection.fallback] {
            guard let index, !index.isEmpty else { continue }
            let matched = index.forEachPin(matching: host) { pin in
                guard connection.now < pin.expires else { return false }
                listApplies = true
                switch connection.evidence.matches(pin.kind, digest: pin.fingerprint) {
                case true?: return true
                case nil: unprovable = true; return false
                case false?: return false
                }
            }
            if matched { return .pinned }
        }
        var policyApplies = false
        var policyEnforces = false
        for policy in policies where connection.now < policy.expires && policy.pattern.matches(host) {
            policyApplies = true
            policyEnforces = policyEnforces || !policy.policy.reportOnly
            switch policy.admits(connection.evidence) {
            case true?: return .pinned
            case nil: unprovable = true
            case false?: continue
            }
        }
        guard listApplies || policyApplies else {
            return .failsRule(.noPinsForHost(updateResult: nil), enforcing: listEnforced, relaxable: true)
        }
        return .failsRule(unprovable ? .issuerPinsNeedChain : .pinMismatch,
                          enforcing: (listApplies && listEnforced) || policyEnforces, relaxable: true)
    }
}
