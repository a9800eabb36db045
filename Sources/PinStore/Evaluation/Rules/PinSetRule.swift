/// The pins: a connection is allowed when at least one unexpired pin that applies to the host
/// matches. Two sources apply, and either may admit the chain:
/// - the signed list's entries for the host (downloaded, then fallback);
/// - the static policies' pins, from the single most specific policy that matches the host
///   (none when that one has expired) (``StaticPins/selection(for:now:)``: exact name over `*.` over any depth, as
///   Apple, Android and TrustKit choose), so a broad parent policy cannot admit what the
///   host's own policy refuses.
///
/// The list and the policies are unioned on purpose: both come from the team, the list being
/// the part that rotates without a release and the policies the part that survives a list the
/// store cannot download. Each is the other's backup during a rotation, and neither can widen
/// trust beyond what the team signed or compiled in (deny pins are checked before, and win).
///
/// Pins apply, none matches: a pin mismatch (or, for a leaf alone that cannot prove an issuer
/// pin, ``PinningFailure/Reason/issuerPinsNeedChain``). Nothing applies: the host has no pins
/// (an expired policy no longer applies: a clock moved forward must not open hosts).
///
/// Report-only may relax these failures: the list's pins and hosts without pins are enforced
/// unless ``PinStore/Configuration/enforcement`` says otherwise, the policies unless every
/// policy matching the host is ``PinPolicy/reportOnly``; any enforcing source enforces.
final class PinSetRule: PinningRule {
    let staticPins: StaticPins
    /// Whether the list's pins (downloaded and fallback), and hosts without pins, enforce.
    let listEnforced: Bool

    init(staticPins: StaticPins, listEnforced: Bool) {
        self.staticPins = staticPins
        self.listEnforced = listEnforced
    }

    func check(_ connection: PinningContext) -> PinningRuleResult {
        let host = connection.host.text
        // The downloaded list, then the fallback (not a loop over `[list, fallback]`: that
        // array cost a heap allocation per decision).
        var seen = ListPinsSeen()
        if Self.matches(in: connection.list, connection, &seen) || Self.matches(in: connection.fallback, connection, &seen) {
            return .pinned
        }
        let listApplies = seen.applies
        var unprovable = seen.unprovable
        let selection = staticPins.policies.isEmpty ? nil : staticPins.selection(for: host, now: connection.now)
        if let policy = selection?.policy {
            switch policy.admits(connection.evidence) {
            case true?: return .pinned
            case nil: unprovable = true
            case false?: break
            }
        }
        let policyApplies = selection?.policy != nil
        let policyEnforces = selection?.enforcing ?? false
        guard listApplies || policyApplies else {
            // An enforcing policy whose narrower neighbour expired still enforces here.
            return .failsRule(.noPinsForHost(updateResult: nil), enforcing: listEnforced || policyEnforces, relaxable: true)
        }
        return .failsRule(unprovable ? .issuerPinsNeedChain : .pinMismatch,
                          enforcing: (listApplies && listEnforced) || policyEnforces, relaxable: true)
    }

    /// What the list's pins for a host showed.
    private struct ListPinsSeen {
        /// An unexpired pin applies to the host.
        var applies = false
        /// A pin applies that what the connection shows cannot prove either way.
        var unprovable = false
    }

    /// Whether an unexpired pin of `index` for the host matches; records in `seen` what applied.
    /// What it saw goes through an `inout`, checked at compile time: variables captured and
    /// written by the closure cost a dynamic exclusivity check (swift_beginAccess) each.
    private static func matches(in index: PinIndex?, _ connection: PinningContext, _ seen: inout ListPinsSeen) -> Bool {
        guard let index, !index.isEmpty else { return false }
        return index.forEachPin(matching: connection.host.text, updating: &seen) { pin, seen in
            guard connection.now < pin.expires else { return false }
            seen.applies = true
            switch connection.evidence.matches(pin.kind, digest: pin.fingerprint) {
            case true?: return true
            case nil: seen.unprovable = true; return false
            case false?: return false
            }
        }
    }

    /// The list's and the fallback's exact names, and every policy's domain: a host there may
    /// select another policy than its neighbours (the most specific one decides). For `*.base`
    /// the base itself is one host too many, which costs one decision, never skips one.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
        for index in [tables.list, tables.fallback].compactMap({ $0 }) {
            for (name, _) in index.exact.names { names.insert(name) }
        }
        for policy in staticPins.policies { names.insert(policy.pattern.base) }
    }
}
