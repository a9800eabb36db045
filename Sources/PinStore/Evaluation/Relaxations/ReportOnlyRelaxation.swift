/// Report-only (audit) mode: a pin failure no enforcing source stands behind, or any pin
/// failure when the whole store runs report-only, lets the connection go on as
/// ``PinningDecision/reportOnly(_:validatedChain:)``. Only the failures of the pin set reach
/// it: never the trust evaluation, expected hosts or deny pins.
final class ReportOnlyRelaxation: PinFailureRelaxation {
    /// ``PinStore/Configuration/Enforcement/reportOnly``: every pin failure is reported.
    let storeWide: Bool

    init(storeWide: Bool) {
        self.storeWide = storeWide
    }

    func relax(_ failure: PinningFailure, enforcing: Bool, _ connection: PinningContext) -> PinningDecision? {
        guard storeWide || !enforcing else { return nil }
        return .reportOnly(failure, validatedChain: connection.evidence.certificates)
    }

    /// None: report-only policies are singled out by the pin set (their domains).
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {}
}
