import Foundation

/// The `certificateTransparency` section of the team's signed list: the CT logs the team
/// trusts, when that list of logs was made, the compliance profile and the per-host modes.
///
/// ```json
/// "certificateTransparency": {
///   "logListTimestamp": 1763942400,
///   "profile": "chrome",
///   "logs": [{"key": "<Base64 SPKI DER>", "id": "<Base64 SHA-256 of key>", "operator": "Example Operator",
///             "type": "rfc6962", "state": "usable", "stateTimestamp": 1700000000,
///             "temporalInterval": {"start": 1767225600, "end": 1782864000},
///             "previousOperators": [{"name": "Old Operator", "endTime": 1600000000}]}],
///   "hosts": [{"name": "api.partner.example", "mode": "enforce"}, {"name": "*.reports.example", "mode": "reportOnly"}]
/// }
/// ```
///
/// Times are Unix seconds, as everywhere else in the list. The section is honoured only where
/// a signature covers it: the whole-list signature of a static list, the response signature
/// in challenge mode (``ListVerifier``).
///
/// Parsed leniently where a future list may grow (unknown members, a state PinStore does not
/// know, which then never counts, an operator with only static-ct-api logs) and strictly
/// where a log key or a mode could hide: a key that does not parse, an `id` that is not the
/// SHA-256 of its key, a log named twice, an unknown log type, mode or profile, or a host
/// named twice refuses the whole list, never a part of it.
package struct CTLogList: Sendable {
    /// When the team made this list of logs (Unix seconds): CT is enforced for
    /// ``freshnessWindow`` after it, then fails open.
    let timestamp: Int64
    /// The profile the list names, if any (else the configuration's).
    let profile: CertificateTransparencyProfile?
    /// The logs, by log id.
    let logs: [Digest32: Log]
    /// The per-host modes, as written.
    let hosts: [(pattern: HostPattern, mode: CertificateTransparencyMode)]
    /// A number no other section read by this process has: CT verdicts are cached per section,
    /// so a pin expiring (which moves the store's generation) does not verify SCTs again.
    let serial: UInt64

    private static let serials = Locked<UInt64>(0)

    /// Chrome's rule, which Apple's clients follow in spirit: a log list older than 70 days
    /// no longer says which logs are trustworthy, so CT fails open rather than refusing
    /// certificates logged to logs the list has not heard of.
    static let freshnessWindow: Int64 = 70 * 86_400

    /// The most logs a list may name. Google's list names under a hundred; the cap keeps a
    /// list from making a store parse thousands of keys.
    static let maximumLogs = 256

    /// One CT log.
    struct Log: Sendable {
        let id: Digest32
        let key: CTLogKey
        let operatorName: String
        let kind: Kind
        let state: State
        /// When the log entered ``state`` (Unix seconds); for a retired log, the retirement.
        let stateSince: Int64?
        /// The leaf expiry dates (`notAfter`) the log accepts, `start` inclusive, `end` exclusive.
        let temporalInterval: (start: Int64, end: Int64)?
        /// Earlier operators, each with the end of its tenure (Unix seconds), oldest first.
        let previousOperators: [(name: String, endTime: Int64)]

        enum Kind: String, Sendable {
            case rfc6962
            case staticCTAPI = "static-ct-api"
        }

        /// The log's state in the list (Chrome's log lifecycle).
        enum State: Sendable, Equatable {
            case pending, qualified, usable, readOnly, retired, rejected
            /// A state this version does not know: never counts.
            case unknown(String)

            init(_ text: String) {
                switch text {
                case "pending": self = .pending
                case "qualified": self = .qualified
                case "usable": self = .usable
                case "readonly", "readOnly": self = .readOnly
                case "retired": self = .retired
                case "rejected": self = .rejected
                default: self = .unknown(text)
                }
            }

            var name: String {
                switch self {
                case .pending: "pending"
                case .qualified: "qualified"
                case .usable: "usable"
                case .readOnly: "readonly"
                case .retired: "retired"
                case .rejected: "rejected"
                case .unknown(let text): text
                }
            }
        }

        /// The operator when an SCT was issued at `timestamp` (milliseconds): the first
        /// earlier operator whose tenure had not ended yet, else today's.
        func operatorName(atMilliseconds timestamp: UInt64) -> String {
            let seconds = Int64(clamping: timestamp / 1000)
            for previous in previousOperators where seconds < previous.endTime {
                return previous.name
            }
            return operatorName
        }
    }

    /// The mode the list gives `host` (a lookup key): the most specific pattern that matches
    /// it, nil when none does.
    func mode(for host: String) -> CertificateTransparencyMode? {
        var best: (HostPattern.Specificity, CertificateTransparencyMode)?
        for (pattern, mode) in hosts where pattern.matches(host) {
            let specificity = pattern.specificity(for: host)
            if best == nil || best!.0 < specificity { best = (specificity, mode) }
        }
        return best?.1
    }

    /// Whether the list is past ``freshnessWindow`` at `now` (Unix seconds).
    func isStale(at now: Int64) -> Bool {
        now > timestamp &+ Self.freshnessWindow
    }

    /// Reads the section. Throws ``PinStoreError/Code/invalidListData`` saying what is wrong.
    init(_ wire: Wire) throws(PinStoreError) {
        func refuse(_ why: String) -> PinStoreError {
            PinStoreError(.invalidListData, "certificateTransparency: \(why)")
        }
        guard wire.logListTimestamp >= 0, wire.logListTimestamp <= FingerprintListDocument.latestExpires else {
            throw refuse("logListTimestamp \(wire.logListTimestamp) is not a Unix time in seconds between 1970 and 9999.")
        }
        timestamp = wire.logListTimestamp
        if let name = wire.profile {
            guard let known = CertificateTransparencyProfile(rawValue: name) else {
                throw refuse("profile \(String(reflecting: name)) is neither \"chrome\" nor \"apple\"; this PinStore cannot judge SCTs by it.")
            }
            profile = known
        } else {
            profile = nil
        }
        let wireLogs = wire.logs ?? []
        guard wireLogs.count <= Self.maximumLogs else {
            throw refuse("\(wireLogs.count) logs; at most \(Self.maximumLogs) are read.")
        }
        var logs: [Digest32: Log] = [:]
        for (index, item) in wireLogs.enumerated() {
            let position = "log \(index + 1)"
            guard let spki = Base64.decodeStrict(item.key) else { throw refuse("\(position): key is not valid Base64.") }
            let key: CTLogKey
            do {
                key = try CTLogKey(spki: spki)
            } catch {
                throw refuse("\(position): the key is not a usable CT log key (\(error.reason)).")
            }
            if let id = item.id {
                // The id is the SHA-256 of the key: a list whose id disagrees was made wrong
                // (or edited), and would make SCTs match a key other than the one named.
                guard let stated = Base64.decodeStrict(id), let digest = Digest32(stated), digest.constantTimeEquals(key.id) else {
                    throw refuse("\(position): id \(id) is not the SHA-256 of its key (\(key.id.data.base64EncodedString())).")
                }
            }
            guard !item.operator.isEmpty else { throw refuse("\(position): operator is empty; diversity is counted by operator.") }
            let kind: Log.Kind
            switch item.type {
            case nil: kind = .rfc6962
            case let text?:
                guard let known = Log.Kind(rawValue: text) else {
                    throw refuse("\(position): type \(String(reflecting: text)) is neither \"rfc6962\" nor \"static-ct-api\".")
                }
                kind = known
            }
            var interval: (Int64, Int64)?
            if let temporal = item.temporalInterval {
                guard temporal.start < temporal.end else { throw refuse("\(position): temporalInterval ends before it starts.") }
                interval = (temporal.start, temporal.end)
            }
            let previous = (item.previousOperators ?? []).map { ($0.name, $0.endTime) }.sorted { $0.1 < $1.1 }
            guard logs[key.id] == nil else { throw refuse("\(position): the log \(key.id.data.base64EncodedString()) is named twice.") }
            logs[key.id] = Log(id: key.id, key: key, operatorName: item.operator, kind: kind, state: Log.State(item.state),
                               stateSince: item.stateTimestamp, temporalInterval: interval, previousOperators: previous)
        }
        self.logs = logs
        hosts = try (wire.hosts ?? []).modes(CertificateTransparencyMode.init(rawValue:),
                                             allowed: "\"off\", \"reportOnly\" or \"enforce\"", refuse: refuse)
        serial = Self.serials.withLock { last in
            last &+= 1
            return last
        }
    }

    /// The section as JSON (what the tool writes and the list carries). Package-visible so that
    /// the signing side (PinStoreSigning) writes the very shape the store reads.
    package struct Wire: Codable, Sendable {
        package struct Log: Codable, Sendable {
            package struct Interval: Codable, Sendable {
                let start: Int64
                let end: Int64
                package init(start: Int64, end: Int64) {
                    self.start = start
                    self.end = end
                }
            }
            package struct PreviousOperator: Codable, Sendable {
                let name: String
                let endTime: Int64
                package init(name: String, endTime: Int64) {
                    self.name = name
                    self.endTime = endTime
                }
            }
            let key: String
            let id: String?
            let `operator`: String
            let type: String?
            let state: String
            let stateTimestamp: Int64?
            let temporalInterval: Interval?
            let previousOperators: [PreviousOperator]?

            package init(key: String, id: String?, operator: String, type: String?, state: String, stateTimestamp: Int64?,
                         temporalInterval: Interval?, previousOperators: [PreviousOperator]?) {
                self.key = key
                self.id = id
                self.operator = `operator`
                self.type = type
                self.state = state
                self.stateTimestamp = stateTimestamp
                self.temporalInterval = temporalInterval
                self.previousOperators = previousOperators
            }
        }
        /// A host entry: only `name` and `mode`. An unknown member is refused, not ignored: a
        /// mode could hide there (`"subdomains": true` would cover fewer hosts than meant).
        package struct Host: Codable, Sendable, Hashable {
            let name: String
            let mode: String

            package init(name: String, mode: String) {
                self.name = name
                self.mode = mode
            }

            private enum CodingKeys: String, CodingKey { case name, mode }

            package init(from decoder: any Decoder) throws {
                try StrictMembers.refuseUnknown(in: decoder, known: ["name", "mode"], "a host entry has only \"name\" and \"mode\"")
                let container = try decoder.container(keyedBy: CodingKeys.self)
                name = try container.decode(String.self, forKey: .name)
                mode = try container.decode(String.self, forKey: .mode)
            }
        }
        let logListTimestamp: Int64
        let profile: String?
        let logs: [Log]?
        let hosts: [Host]?

        package init(logListTimestamp: Int64, profile: String?, logs: [Log]?, hosts: [Host]?) {
            self.logListTimestamp = logListTimestamp
            self.profile = profile
            self.logs = logs
            self.hosts = hosts
        }
    }
}

extension [CTLogList.Wire.Host] {
    /// The per-host modes of a signed section (the CT section's and the `crl` section's), read
    /// strictly: an unknown mode, a name that is not a host or pattern, or two entries equally
    /// specific for some name (which mode applies would be ambiguous) refuses the section.
    func modes<Mode>(_ mode: (String) -> Mode?, allowed: String,
                     refuse: (String) -> PinStoreError) throws(PinStoreError) -> [(pattern: HostPattern, mode: Mode)] {
        try modes(mode, allowed: { _ in allowed }, refuse: refuse)
    }

    /// ``modes(_:allowed:refuse:)`` with the text of what was expected chosen per refused mode
    /// (a retired spelling gets its replacement named).
    func modes<Mode>(_ mode: (String) -> Mode?, allowed: (String) -> String,
                     refuse: (String) -> PinStoreError) throws(PinStoreError) -> [(pattern: HostPattern, mode: Mode)] {
        var hosts: [(pattern: HostPattern, mode: Mode)] = []
        for (index, item) in enumerated() {
            guard let parsed = mode(item.mode) else {
                throw refuse("host \(index + 1) (\(String(reflecting: item.name))): mode \(String(reflecting: item.mode)) is not \(allowed(item.mode)).")
            }
            let pattern: HostPattern
            do {
                pattern = try HostPattern(domain: item.name, subdomains: .none)
            } catch {
                throw refuse("host \(index + 1): \(error.reason)")
            }
            if hosts.contains(where: { $0.pattern.conflicts(with: pattern) }) {
                throw refuse("host \(index + 1) (\(String(reflecting: item.name))) is as specific as an earlier host for some name; which mode applies would be ambiguous.")
            }
            hosts.append((pattern, parsed))
        }
        return hosts
    }
}
