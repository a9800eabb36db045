import Foundation

/// One step of the pin check after the normal trust evaluation: a small value answering
/// whether a connection meets it (in the shape of swift-certificates' `VerifierPolicy`).
/// Their order is written once, in ``PinningRules``.
///
/// Class-bound: the list holds each rule as one reference, so running it costs a witness call.
/// As structs in `[any PinningRule]`, every decision copied each rule out of its existential
/// box (value witnesses, retains of its tables) before asking it anything.
protocol PinningRule: AnyObject, Sendable {
    func check(_ connection: PinningContext) -> PinningRuleResult

    /// Adds to `names` every exact host name this rule may treat apart from its neighbours
    /// under `tables` (a host or domain it has an entry for); a rule that treats every host
    /// alike adds none. The leaf view (LeafView.swift) decides each such name behind a
    /// wildcard leaf on its own, so a host a rule singles out is never judged through a
    /// made-up neighbour. No default on purpose: a new rule must answer.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>)
}

/// What a ``PinningRule`` says about a connection.
///
/// The failures are `indirect`: the two answers every decision gets from most rules (meets,
/// pinned) then fit in one register, where a failure's reason inline made every rule's answer
/// nine words copied through memory.
enum PinningRuleResult: Sendable, Equatable {
    /// The rule has nothing against the connection: the next rule decides.
    case meetsRule
    /// A pin that applies to the host matches: the connection is allowed, no later rule runs.
    case pinned
    /// The connection fails the rule.
    ///
    /// - Parameters:
    ///   - enforcing: Whether a source behind the failure enforces; a relaxation
    ///     (``PinFailureRelaxation``) may turn a failure nobody enforces into a report.
    ///   - relaxable: False for the failures nothing may relax (expected hosts, deny pins).
    indirect case failsRule(PinningFailure.Reason, enforcing: Bool, relaxable: Bool)
    /// The connection fails a check its host runs report-only (Certificate Transparency in
    /// ``CertificateTransparencyMode/reportOnly``): the failure is reported and the later rules
    /// still decide, so a report-only check can never let through what they refuse.
    indirect case reportsOnly(PinningFailure.Reason)
}

/// A way a pin failure can end other than in a refusal (``DomainsConfig``, report-only).
/// Class-bound, as ``PinningRule``.
protocol PinFailureRelaxation: AnyObject, Sendable {
    /// The decision instead of a refusal, or nil to leave the failure alone.
    func relax(_ failure: PinningFailure, enforcing: Bool, _ connection: PinningContext) -> PinningDecision?

    /// As ``PinningRule/singledOutHosts(_:into:)``: the hosts this relaxation treats apart.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>)
}

/// The tables in force for one decision that rules single hosts out of (the same snapshot as
/// the decision's ``PinningContext``).
struct PinningTables: Sendable {
    /// The list in force: its pins and signed sections, one snapshot.
    let listInForce: ListSnapshot
    /// The configuration's fallback pins.
    let fallback: PinIndex

    init(listInForce: ListSnapshot, fallback: PinIndex) {
        self.listInForce = listInForce
        self.fallback = fallback
    }

    /// Tables from their parts (rule tests).
    init(list: PinIndex?, fallback: PinIndex, domainsConfig: DomainsConfig?, certificateTransparency: CTLogList?,
         revocations: ListRevocations? = nil, crl: CRLHostList? = nil) {
        self.init(listInForce: ListSnapshot(index: list, domainsConfig: domainsConfig, certificateTransparency: certificateTransparency,
                                            revocations: revocations, crl: crl),
                  fallback: fallback)
    }

    /// The signed list in force, if any.
    var list: PinIndex? { listInForce.index }
    /// The signed challenge-mode list's per-domain switch, if any.
    var domainsConfig: DomainsConfig? { listInForce.domainsConfig }
    /// The signed list's Certificate Transparency section, if any.
    var certificateTransparency: CTLogList? { listInForce.certificateTransparency }
    /// The signed list's `revocations` section, if any.
    var revocations: ListRevocations? { listInForce.revocations }
    /// The signed list's `crl` section, if any.
    var crl: CRLHostList? { listInForce.crl }
}

/// Everything a rule may look at for one decision: the host, what is known of the chain, and
/// the pins in force when the decision started (one snapshot, so an update that lands in the
/// middle cannot mix two lists).
struct PinningContext: Sendable {
    /// The host the connection was made for.
    let host: HostName
    /// The name as the caller wrote it, for failures and reports.
    let requestedName: String
    let evidence: ChainEvidence
    /// The list in force: its pins and signed sections, one snapshot (held whole: one retain
    /// per decision instead of a copy of each section).
    let listInForce: ListSnapshot
    /// The configuration's fallback pins.
    let fallback: PinIndex
    /// Unix seconds: pins and policies expire against it.
    let now: Int64

    init(host: HostName, requestedName: String, evidence: ChainEvidence, tables: PinningTables, now: Int64) {
        self.host = host
        self.requestedName = requestedName
        self.evidence = evidence
        self.listInForce = tables.listInForce
        self.fallback = tables.fallback
        self.now = now
    }

    /// A context from its parts (rule tests, benchmarks).
    init(host: HostName, requestedName: String, evidence: ChainEvidence, list: PinIndex?, fallback: PinIndex,
         domainsConfig: DomainsConfig?, now: Int64, certificateTransparency: CTLogList? = nil,
         revocations: ListRevocations? = nil, crl: CRLHostList? = nil) {
        self.init(host: host, requestedName: requestedName, evidence: evidence,
                  tables: PinningTables(list: list, fallback: fallback, domainsConfig: domainsConfig,
                                        certificateTransparency: certificateTransparency, revocations: revocations, crl: crl),
                  now: now)
    }

    /// The signed list in force, if any.
    var list: PinIndex? { listInForce.index }
    /// The signed challenge-mode list's per-domain switch, if any.
    var domainsConfig: DomainsConfig? { listInForce.domainsConfig }
    /// The signed list's Certificate Transparency section, if any (same snapshot as ``list``).
    var certificateTransparency: CTLogList? { listInForce.certificateTransparency }
    /// The signed list's `revocations` section, if any (same snapshot as ``list``).
    var revocations: ListRevocations? { listInForce.revocations }
    /// The signed list's `crl` section, if any (same snapshot as ``list``).
    var crl: CRLHostList? { listInForce.crl }

    /// A failure of this connection.
    func failure(_ reason: PinningFailure.Reason, details: String? = nil) -> PinningFailure {
        PinningFailure(host: requestedName, reason: reason, details: details)
    }
}
