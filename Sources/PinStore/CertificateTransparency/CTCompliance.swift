import Foundation

/// The compliance rules of a ``CertificateTransparencyProfile`` over SCTs already checked
/// against their logs' keys: a pure function of the evidence, the team's log list and the
/// time, tested without certificates.
enum CTCompliance {
    /// 180 days: the lifetime up to which both profiles ask for 2 SCTs (3 above).
    static let shortLifetime: Int64 = 180 * 86_400

    /// The SCTs a leaf needs under `profile`: 2 up to ``shortLifetime``, 3 above. The profiles
    /// measure the lifetime differently. Chrome takes `notAfter - notBefore` (Chromium's
    /// policy enforcer subtracts the two dates). Apple counts from `notBefore` through
    /// `notAfter` inclusive (support.apple.com/103214), so the last second counts: a leaf whose
    /// `notAfter` is exactly 180 days after its `notBefore` lives 180 days and one second.
    static func requiredSCTs(_ profile: CertificateTransparencyProfile, leafNotBefore: Int64, leafNotAfter: Int64) -> Int {
        let lifetime = leafNotAfter - leafNotBefore + (profile == .apple ? 1 : 0)
        return lifetime <= shortLifetime ? 2 : 3
    }

    /// nil when `evidence` complies with `profile` under `logs` at `now` (Unix seconds).
    static func violation(of profile: CertificateTransparencyProfile, evidence: EmbeddedSCTEvidence,
                          logs: CTLogList, now: Int64) -> CertificateTransparencyViolation? {
        let required = requiredSCTs(profile, leafNotBefore: evidence.leafNotBefore, leafNotAfter: evidence.leafNotAfter)
        var unknown = 0
        // The SCTs that count, one per log (a second SCT from the same log adds nothing).
        var counted: [Digest32: (log: CTLogList.Log, timestamp: UInt64)] = [:]
        var notes: [String] = []
        for check in evidence.checks {
            let id = Digest32(check.sct.logID)
            let label = id.map { String($0.data.base64EncodedString().prefix(8)) } ?? "?"
            guard check.status == .verified else {
                if check.status == .unknownLog { unknown += 1 }
                notes.append("\(label): \(check.status)")
                continue
            }
            guard let id, let log = logs.logs[id] else {
                unknown += 1
                notes.append("\(label): unknownLog")
                continue
            }
            guard counts(log, timestamp: check.sct.timestamp, leafNotAfter: evidence.leafNotAfter, profile: profile) else {
                notes.append("\(label): \(log.state.name) log, does not count")
                continue
            }
            notes.append("\(label): verified (\(log.operatorName(atMilliseconds: check.sct.timestamp)))")
            if counted[id] == nil { counted[id] = (log, check.sct.timestamp) }
        }
        let detail = notes.joined(separator: ", ")
        func fail(_ problem: CertificateTransparencyViolation.Problem) -> CertificateTransparencyViolation {
            CertificateTransparencyViolation(problem: problem, sctsFromUnknownLogs: unknown, detail: detail)
        }
        let operators = Dictionary(grouping: counted.values) { $0.log.operatorName(atMilliseconds: $0.timestamp) }
        // Both profiles count SCTs from logs approved once (retired before or after the SCT), but
        // want one of them from a log approved now, so a leaf cannot live on retired logs alone.
        let oneFromACurrentLog = counted.values.contains { isCurrent($0.log.state) }
        switch profile {
        case .chrome:
            guard counted.count >= required else { return fail(.tooFewSCTs(required: required, counted: counted.count)) }
            guard oneFromACurrentLog else { return fail(.noSCTFromCurrentLog) }
            guard operators.count >= 2 else { return fail(.tooFewOperators(required: 2, counted: operators.count)) }
        case .apple:
            // At most 1 SCT per operator counts toward 2, at most 2 toward 3.
            let perOperator = required - 1
            let total = operators.values.reduce(0) { $0 + min($1.count, perOperator) }
            guard total >= required else { return fail(.tooFewSCTs(required: required, counted: total)) }
            guard oneFromACurrentLog else { return fail(.noSCTFromCurrentLog) }
            guard counted.values.contains(where: { $0.log.kind == .rfc6962 }) else { return fail(.noSCTFromRFC6962Log) }
        }
        return nil
    }

    /// Whether an SCT of `log` issued at `timestamp` (milliseconds) counts.
    static func counts(_ log: CTLogList.Log, timestamp: UInt64, leafNotAfter: Int64, profile: CertificateTransparencyProfile) -> Bool {
        if profile == .apple, let interval = log.temporalInterval,
           !(interval.start <= leafNotAfter && leafNotAfter < interval.end) {
            return false
        }
        switch log.state {
        case .qualified, .usable, .readOnly:
            return true
        case .retired:
            // Only an SCT issued before the retirement; a retirement without a date counts none.
            guard let retired = log.stateSince else { return false }
            return timestamp / 1000 < UInt64(clamping: max(retired, 0))
        case .pending, .rejected, .unknown:
            return false
        }
    }

    private static func isCurrent(_ state: CTLogList.Log.State) -> Bool {
        switch state {
        case .qualified, .usable, .readOnly: true
        default: false
        }
    }
}
