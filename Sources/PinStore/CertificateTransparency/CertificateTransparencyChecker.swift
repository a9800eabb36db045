import CoreMetrics
import Foundation
import Logging

/// A store's Certificate Transparency check: which mode a host is in, the SCT verification
/// (through ``EmbeddedSCTs``) judged by the profile (``CTCompliance``), the verdicts cached
/// per chain and list, the metrics and the fail-open log line.
///
/// The rule that asks it (``CertificateTransparencyRule``) runs on every decision, pooled
/// re-checks included; a chain already judged under the list in force costs one dictionary
/// lookup.
final class CertificateTransparencyChecker: Sendable {
    /// The mode of hosts the signed list does not name.
    let defaultMode: CertificateTransparencyMode
    /// The profile when the list names none.
    let defaultProfile: CertificateTransparencyProfile
    /// Whether chains that lead to an anchor the app configured (a private CA) are checked too.
    let checksPrivateAnchors: Bool
    /// ATS exceptions with `NSRequiresCertificateTransparency`.
    private let transportSecurity: TransportSecurityExceptionTable
    private let logger: Logger
    private let metrics: Metrics

    /// SHA-256 of the certificates the app configured as its only anchors (``TrustRoots/anchors``
    /// without the system store) through an evaluator of this store: a chain that ends at one
    /// is privately anchored.
    private let privateAnchors = Locked<Set<Digest32>>([])
    private let verdicts = Locked<[VerdictKey: Verdict]>([:])
    /// When the fail-open line was last logged (Unix seconds).
    private let lastFailOpenLog = Locked<Int64?>(nil)
    /// When the ageing warning was last logged (Unix seconds).
    private let lastAgeingLog = Locked<Int64?>(nil)
    /// How long before the log list goes stale the ageing warning starts.
    static let ageingWarning: Int64 = 14 * 86_400

    /// How long a verdict stands without the list changing: an SCT stamped in the future, or
    /// a leaf that expires, is judged again within this time.
    static let verdictLifetime: Int64 = 600
    static let verdictLimit = 4_096
    /// At most one fail-open line per this many seconds.
    static let failOpenLogInterval: Int64 = 3_600

    private struct VerdictKey: Hashable {
        let leaf: Digest32
        let issuer: Digest32
        /// ``CTLogList/serial``: a new section (a new log list, new states) judges again.
        let section: UInt64
    }

    private struct Verdict {
        let violation: CertificateTransparencyViolation?
        let decidedAt: Int64
    }

    convenience init(configuration: PinStore.Configuration, transportSecurity: TransportSecurityExceptionTable, logger: Logger,
                     metricsFactory: any MetricsFactory) {
        self.init(defaultMode: configuration.certificateTransparency, defaultProfile: configuration.certificateTransparencyProfile,
                  checksPrivateAnchors: configuration.certificateTransparencyForPrivateAnchors, transportSecurity: transportSecurity,
                  logger: logger, identifier: configuration.identifier, metricsFactory: metricsFactory)
    }

    init(defaultMode: CertificateTransparencyMode, defaultProfile: CertificateTransparencyProfile = .chrome,
         checksPrivateAnchors: Bool = false, transportSecurity: TransportSecurityExceptionTable = .none,
         logger: Logger = Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() }),
         identifier: String = "default", metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.defaultMode = defaultMode
        self.defaultProfile = defaultProfile
        self.checksPrivateAnchors = checksPrivateAnchors
        self.transportSecurity = transportSecurity
        self.logger = logger
        metrics = Metrics(identifier: identifier, factory: metricsFactory)
    }

    /// Remembers the anchors of an evaluator that trusts them alone (see ``privateAnchors``).
    /// Anchors added to the system store are not: a chain they validate may be a public one.
    func registerPrivateAnchors(of roots: TrustRoots) {
        guard !roots.includesSystemStore else { return }
        registerPrivateAnchors(roots.anchors)
    }

    /// Remembers `anchors` as private (see ``privateAnchors``).
    func registerPrivateAnchors(_ anchors: [X509Certificate]) {
        guard !anchors.isEmpty else { return }
        let digests = anchors.compactMap { Digest32(SHA256Digest.hash($0.derRepresentation)) }
        privateAnchors.withLock { $0.formUnion(digests) }
    }

    /// The mode for `host`: the signed list's most specific entry, else the configuration's
    /// default; an ATS exception that requires CT enforces it whatever the list says.
    func mode(for host: HostName, list: CTLogList?) -> CertificateTransparencyMode {
        let key = host.text
        let listed = list?.mode(for: key) ?? defaultMode
        return transportSecurity.requirements(for: key).requiresCertificateTransparency ? .enforce : listed
    }

    /// Whether a host in a mode other than off fails open now: no log list, or a stale one.
    func failsOpen(list: CTLogList?, now: Int64) -> Bool {
        list.map { $0.isStale(at: now) } ?? true
    }

    /// False when no host can be under CT (no section in the list, the default off, no ATS
    /// exception requiring it): what every decision's report asks first, so stores without CT
    /// pay nothing more.
    func mayApply(list: CTLogList?) -> Bool {
        list != nil || defaultMode != .off || transportSecurity.requiresCertificateTransparencyAnywhere
    }

    /// The exact names whose CT mode may differ from their neighbours': the hosts `list` names,
    /// and the ATS exceptions' domains.
    func singledOutHosts(_ list: CTLogList?, into names: inout Set<String>) {
        for (pattern, _) in list?.hosts ?? [] { names.insert(pattern.base) }
        names.formUnion(transportSecurity.domains)
    }

    /// The CT part of the pin rules for one connection.
    func check(_ connection: PinningContext) -> PinningRuleResult {
        // Stores without CT anywhere pay one compare per decision, not a host lookup.
        guard mayApply(list: connection.certificateTransparency) else { return .meetsRule }
        let mode = mode(for: connection.host, list: connection.certificateTransparency)
        guard mode != .off else { return .meetsRule }
        guard case .validated(let chain) = connection.evidence else {
            metrics.record(.unverifiable)
            return result(CertificateTransparencyViolation(problem: .needsValidatedChain, detail: ""), mode: mode)
        }
        if !checksPrivateAnchors {
            let anchors = privateAnchors.withLock { $0 }
            // The chain ends at its anchor (the trust evaluation's output): exempt only when that
            // anchor is a private one, never because a private anchor appears inside the chain.
            if let anchor = chain.fingerprints.last, anchors.contains(anchor) {
                metrics.record(.skipped)
                return .meetsRule
            }
        }
        guard let logs = connection.certificateTransparency, !logs.isStale(at: connection.now) else {
            noteFailOpen(list: connection.certificateTransparency, host: connection.requestedName, now: connection.now)
            return .meetsRule
        }
        metrics.logListAge.record(max(0, connection.now - logs.timestamp))
        noteAgeing(logs, now: connection.now)
        guard chain.count >= 2 else {
            metrics.record(.unverifiable)
            return result(CertificateTransparencyViolation(problem: .noIssuer, detail: ""), mode: mode)
        }
        let key = VerdictKey(leaf: chain.fingerprints[0], issuer: chain.fingerprints[1], section: logs.serial)
        if let cached = verdicts.withLock({ $0[key] }), connection.now - cached.decidedAt < Self.verdictLifetime,
           connection.now >= cached.decidedAt {
            return cached.violation.map { result($0, mode: mode) } ?? .meetsRule
        }
        let violation = judge(chain: chain, logs: logs, now: connection.now)
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.verdictLimit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[key] = Verdict(violation: violation, decidedAt: connection.now)
        }
        return violation.map { result($0, mode: mode) } ?? .meetsRule
    }

    /// Verifies the leaf's SCTs and judges them; counted in the metrics.
    private func judge(chain: ValidatedChain, logs: CTLogList, now: Int64) -> CertificateTransparencyViolation? {
        let evidence: EmbeddedSCTEvidence
        do {
            evidence = try EmbeddedSCTs.check(leaf: chain.certificates[0], issuer: chain.certificates[1],
                                              logKey: { logs.logs[$0]?.key }, nowMilliseconds: UInt64(clamping: now) &* 1000)
        } catch {
            metrics.record(.unverifiable)
            return CertificateTransparencyViolation(problem: .unreadableSCTs, detail: "\(error)")
        }
        for check in evidence.checks { metrics.record(check.status) }
        let violation = CTCompliance.violation(of: logs.profile ?? defaultProfile, evidence: evidence, logs: logs, now: now)
        metrics.record(Outcome(violation))
        return violation
    }

    private func result(_ violation: CertificateTransparencyViolation, mode: CertificateTransparencyMode) -> PinningRuleResult {
        switch mode {
        case .enforce: .failsRule(.certificateTransparencyNotMet(violation), enforcing: true, relaxable: false)
        case .reportOnly: .reportsOnly(.certificateTransparencyNotMet(violation))
        case .off: .meetsRule
        }
    }

    /// Counts a fail-open check and logs it at most once an hour.
    private func noteFailOpen(list: CTLogList?, host: String, now: Int64) {
        metrics.record(.listStale)
        if let list { metrics.logListAge.record(max(0, now - list.timestamp)) }
        let due = lastFailOpenLog.withLock { last in
            guard last.map({ now - $0 >= Self.failOpenLogInterval || now < $0 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        let why = list.map { "its log list is \((now - $0.timestamp) / 86_400) days old (CT is enforced for 70 days after it)" }
            ?? "the signed list in force carries no certificateTransparency section"
        logger.warning("Certificate Transparency fails open (\(host) and every host that asks for CT): \(why). Publish a list with a fresh log list.")
    }

    /// Two weeks before the log list goes stale, one warning a day: publish a fresh one before
    /// CT fails open.
    private func noteAgeing(_ logs: CTLogList, now: Int64) {
        let staleAt = logs.timestamp &+ CTLogList.freshnessWindow
        guard staleAt - now < Self.ageingWarning else { return }
        let due = lastAgeingLog.withLock { last in
            guard last.map({ now - $0 >= 86_400 || now < $0 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        logger.warning("The signed list's Certificate Transparency log list goes stale in \((staleAt - now) / 86_400) days; CT then fails open. Publish a list with a fresh log list.")
    }

    /// What one CT check ended in: the `outcome` of `pinstore_ct_checks_total`.
    enum Outcome: String, CaseIterable {
        case compliant
        case tooFewSCTs = "too_few_scts"
        case notDiverse = "not_diverse"
        case unverifiable
        case skipped
        case listStale = "list_stale"

        init(_ violation: CertificateTransparencyViolation?) {
            switch violation?.problem.backing {
            case nil: self = .compliant
            case .tooFewSCTs?: self = .tooFewSCTs
            case .tooFewOperators?, .noSCTFromCurrentLog?, .noSCTFromRFC6962Log?: self = .notDiverse
            case .unreadableSCTs?, .noIssuer?, .needsValidatedChain?: self = .unverifiable
            }
        }
    }

    /// `pinstore_ct_checks_total{outcome}`, `pinstore_ct_scts_total{status}` and
    /// `pinstore_ct_log_list_age_seconds`.
    struct Metrics: Sendable {
        static let checksLabel = "pinstore_ct_checks_total"
        static let sctsLabel = "pinstore_ct_scts_total"
        static let logListAgeLabel = "pinstore_ct_log_list_age_seconds"

        private let checks: [String: Counter]
        private let scts: [String: Counter]
        let logListAge: Gauge

        init(identifier: String, factory: any MetricsFactory) {
            let store = ("store", identifier)
            checks = Dictionary(uniqueKeysWithValues: Outcome.allCases.map {
                ($0.rawValue, Counter(label: Self.checksLabel, dimensions: [store, ("outcome", $0.rawValue)], factory: factory))
            })
            let statuses: [SCTStatus] = [.verified, .unknownLog, .invalidSignature, .futureTimestamp, .unsupportedVersion, .unsupportedAlgorithm]
            scts = Dictionary(uniqueKeysWithValues: statuses.map {
                (Self.name($0), Counter(label: Self.sctsLabel, dimensions: [store, ("status", Self.name($0))], factory: factory))
            })
            logListAge = Gauge(label: Self.logListAgeLabel, dimensions: [store], factory: factory)
        }

        func record(_ outcome: Outcome) { checks[outcome.rawValue]?.increment() }
        func record(_ status: SCTStatus) { scts[Self.name(status)]?.increment() }

        static func name(_ status: SCTStatus) -> String {
            switch status {
            case .verified: "verified"
            case .unknownLog: "unknown_log"
            case .invalidSignature: "invalid_signature"
            case .futureTimestamp: "future_timestamp"
            case .unsupportedVersion: "unsupported_version"
            case .unsupportedAlgorithm: "unsupported_algorithm"
            }
        }
    }
}
