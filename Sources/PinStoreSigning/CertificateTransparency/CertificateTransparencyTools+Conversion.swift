import Foundation
import PinStore

/// Making the signed list's Certificate Transparency section (the conversion half of
/// ``CertificateTransparencyTools``; the checking half, which judges a section or a chain as a
/// store does, stays in the core): from a log list in the v3 JSON shape, or from logs named one
/// by one (tests). Every section made is read back by the core's own reader before it is
/// returned.
extension CertificateTransparencyTools {
    /// The `certificateTransparency` section (JSON) from a log list in the v3 shape
    /// (`log_list.json`: `log_list_timestamp`, `operators[].logs` and `operators[].tiled_logs`,
    /// each log's `key`, `log_id`, `state`, `temporal_interval`, `previous_operators`).
    ///
    /// - Parameters:
    ///   - signature: The list's detached signature (`log_list.sig`), checked with
    ///     `signerKey` (a SubjectPublicKeyInfo DER, P-256 or RSA) when both are given.
    ///   - operators: Keep only these operators' logs (all when empty).
    ///   - hosts: Per-host modes (`name` → mode) for the section.
    ///   - profile: The profile the section names, if any.
    package static func section(fromV3 json: Data, signature: Data? = nil, signerKey: Data? = nil, operators: [String] = [],
                                hosts: [(String, CertificateTransparencyMode)] = [],
                                profile: CertificateTransparencyProfile? = nil) throws(PinStoreError) -> Data {
        try checkLogListSignature(json, signature: signature, signerKey: signerKey)
        let v3: V3
        do {
            v3 = try JSONDecoder().decode(V3.self, from: json)
        } catch {
            throw PinStoreError(.invalidListData, "The log list is not in the v3 shape (log_list_timestamp, operators[].logs): \(error)")
        }
        guard let timestamp = parseTime(v3.log_list_timestamp) else {
            throw PinStoreError(.invalidListData, "log_list_timestamp \(String(reflecting: v3.log_list_timestamp)) is not an RFC 3339 time.")
        }
        var logs: [CTLogList.Wire.Log] = []
        let wanted = Set(operators)
        for op in v3.operators where wanted.isEmpty || wanted.contains(op.name) {
            for (log, type) in (op.logs ?? []).map({ ($0, "rfc6962") }) + (op.tiled_logs ?? []).map({ ($0, "static-ct-api") }) {
                let (state, since) = try stateOf(log)
                var interval: CTLogList.Wire.Log.Interval?
                if let temporal = log.temporal_interval {
                    guard let start = parseTime(temporal.start_inclusive), let end = parseTime(temporal.end_exclusive) else {
                        throw PinStoreError(.invalidListData, "Log \(log.log_id): temporal_interval is not two RFC 3339 times.")
                    }
                    interval = .init(start: start, end: end)
                }
                var previous: [CTLogList.Wire.Log.PreviousOperator] = []
                for item in log.previous_operators ?? [] {
                    guard let end = parseTime(item.end_time) else {
                        throw PinStoreError(.invalidListData, "Log \(log.log_id): previous operator end_time is not an RFC 3339 time.")
                    }
                    previous.append(.init(name: item.name, endTime: end))
                }
                logs.append(CTLogList.Wire.Log(key: log.key, id: log.log_id, operator: op.name, type: type, state: state,
                                               stateTimestamp: since, temporalInterval: interval,
                                               previousOperators: previous.isEmpty ? nil : previous))
            }
        }
        if !wanted.isEmpty {
            let found = Set(v3.operators.map(\.name))
            for name in wanted.subtracting(found).sorted() {
                throw PinStoreError(.invalidListData, "The log list has no operator named \(String(reflecting: name)).")
            }
        }
        let wire = CTLogList.Wire(logListTimestamp: timestamp, profile: profile?.rawValue, logs: logs,
                                  hosts: hosts.isEmpty ? nil : hosts.map { .init(name: $0.0, mode: $0.1.rawValue) })
        // Read back as a store will: ids recomputed, keys parsed, hosts checked.
        return try checked(wire)
    }

    /// One log of a section made by ``section(timestamp:profile:logs:hosts:)``.
    package struct Log: Sendable, Hashable {
        package let subjectPublicKeyInfo: Data
        package let operatorName: String
        package let staticCTAPI: Bool
        package let state: String
        package let stateTimestamp: Int64?
        package let temporalInterval: ClosedRange<Int64>?

        package init(subjectPublicKeyInfo: Data, operatorName: String, staticCTAPI: Bool = false, state: String = "usable",
                     stateTimestamp: Int64? = nil, temporalInterval: ClosedRange<Int64>? = nil) {
            self.subjectPublicKeyInfo = subjectPublicKeyInfo
            self.operatorName = operatorName
            self.staticCTAPI = staticCTAPI
            self.state = state
            self.stateTimestamp = stateTimestamp
            self.temporalInterval = temporalInterval
        }
    }

    /// A section naming `logs` (ids computed from their keys) and `hosts`' modes, read back as
    /// a store reads it before it is returned.
    package static func section(timestamp: Int64, profile: CertificateTransparencyProfile? = nil, logs: [Log],
                                hosts: [(String, CertificateTransparencyMode)] = []) throws(PinStoreError) -> Data {
        let wire = CTLogList.Wire(
            logListTimestamp: timestamp, profile: profile?.rawValue,
            logs: logs.map { log in
                CTLogList.Wire.Log(key: log.subjectPublicKeyInfo.base64EncodedString(),
                                   id: SHA256Digest.hash(log.subjectPublicKeyInfo).base64EncodedString(),
                                   operator: log.operatorName, type: log.staticCTAPI ? "static-ct-api" : "rfc6962", state: log.state,
                                   stateTimestamp: log.stateTimestamp,
                                   temporalInterval: log.temporalInterval.map { .init(start: $0.lowerBound, end: $0.upperBound) },
                                   previousOperators: nil)
            },
            hosts: hosts.isEmpty ? nil : hosts.map { .init(name: $0.0, mode: $0.1.rawValue) })
        return try checked(wire)
    }


    private static func stateOf(_ log: V3.Log) throws(PinStoreError) -> (String, Int64?) {
        // One member names the state (`usable`, `retired`, ...), with the time it began.
        // A log without a state (or with several) is carried as a state no store counts.
        guard let state = log.state, let (name, value) = state.first, state.count == 1 else {
            return ("unknown", nil)
        }
        return (name, value.timestamp.flatMap(parseTime))
    }

    /// RFC 3339, with or without fractional seconds.
    private static func parseTime(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) }
    }

    /// The v3 log list, as far as the section needs it (unknown members ignored).
    private struct V3: Decodable {
        struct Operator: Decodable {
            let name: String
            let logs: [Log]?
            let tiled_logs: [Log]?
        }
        struct Log: Decodable {
            struct Interval: Decodable { let start_inclusive: String; let end_exclusive: String }
            struct StateValue: Decodable { let timestamp: String? }
            struct Previous: Decodable { let name: String; let end_time: String }
            let log_id: String
            let key: String
            let state: [String: StateValue]?
            let temporal_interval: Interval?
            let previous_operators: [Previous]?
        }
        let log_list_timestamp: String
        let operators: [Operator]
    }
}
