import CoreMetrics
import Foundation

/// The store's swift-metrics instruments, made once per store so that recording a decision
/// is a counter increment and nothing more. Names and dimensions are listed in README.md.
struct PinStoreMetrics: Sendable {
    /// `pinstore_decisions_total`, one counter per host, outcome and reason, made on first use.
    /// The host dimension is bounded by the configuration (``PinStore/metricsHost(_:)``).
    private let decisions: Locked<[DecisionKey: Counter]>
    private let storeDimension: (String, String)
    private let factory: any MetricsFactory

    private struct DecisionKey: Hashable {
        let host: String
        let outcome: String
        let reason: String
    }

    /// `pinstore_updates_total`, by result.
    private let updates: [PinStore.UpdateResult: Counter]
    /// `pinstore_list_save_failures_total`: verified lists that could not be written to disk.
    let saveFailures: Counter
    /// `pinstore_list_age_seconds`: seconds since the list in force was obtained.
    let listAge: Gauge
    /// `pinstore_valid_pins`: unexpired pins in force (downloaded and fallback).
    let validPins: Gauge
    /// `pinstore_expired_policies`: static policies past their expiration (no longer enforcing).
    let expiredPolicies: Gauge
    /// `pinstore_next_pin_expiry_seconds`: seconds until the nearest expiry of a pin in force
    /// (the list's, the fallback's or a static policy's), so an alert can fire weeks before a
    /// host loses its pins.
    let nextPinExpiry: Gauge
    /// `pinstore_list_expired`: 1 while the list in force is past its own `expires`, else 0.
    let listExpired: Gauge

    static let decisionsLabel = "pinstore_decisions_total"
    static let updatesLabel = "pinstore_updates_total"
    static let saveFailuresLabel = "pinstore_list_save_failures_total"
    static let listAgeLabel = "pinstore_list_age_seconds"
    static let validPinsLabel = "pinstore_valid_pins"
    static let expiredPoliciesLabel = "pinstore_expired_policies"
    static let nextPinExpiryLabel = "pinstore_next_pin_expiry_seconds"
    static let listExpiredLabel = "pinstore_list_expired"

    init(identifier: String, factory: any MetricsFactory) {
        let store = ("store", identifier)
        storeDimension = store
        self.factory = factory
        decisions = Locked([:])
        var updates: [PinStore.UpdateResult: Counter] = [:]
        for result in PinStore.UpdateResult.all {
            updates[result] = Counter(label: Self.updatesLabel, dimensions: [store, ("result", result.metricName)], factory: factory)
        }
        self.updates = updates
        saveFailures = Counter(label: Self.saveFailuresLabel, dimensions: [store], factory: factory)
        listAge = Gauge(label: Self.listAgeLabel, dimensions: [store], factory: factory)
        validPins = Gauge(label: Self.validPinsLabel, dimensions: [store], factory: factory)
        expiredPolicies = Gauge(label: Self.expiredPoliciesLabel, dimensions: [store], factory: factory)
        nextPinExpiry = Gauge(label: Self.nextPinExpiryLabel, dimensions: [store], factory: factory)
        listExpired = Gauge(label: Self.listExpiredLabel, dimensions: [store], factory: factory)
    }

    /// Counts `decision` for `host` (already bounded: a pinned name or `other`).
    func record(_ decision: PinningDecision, host: String) {
        let (outcome, reason) = Self.dimensions(of: decision)
        let key = DecisionKey(host: host, outcome: outcome, reason: reason)
        let counter = decisions.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: Self.decisionsLabel,
                                  dimensions: [storeDimension, ("host", host), ("outcome", outcome), ("reason", reason)],
                                  factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    /// The `outcome` and `reason` dimensions of a decision.
    static func dimensions(of decision: PinningDecision) -> (outcome: String, reason: String) {
        switch decision {
        case .allow: return ("allowed", "pinned")
        case .deny(let failure): return ("denied", failure.reason.metricName)
        case .reportOnly(let failure, _):
            switch failure.reason.backing {
            case .pinMismatch, .noPinsForHost, .issuerPinsNeedChain, .certificateTransparencyNotMet, .crlCheckFailed: return ("reported", failure.reason.metricName)
            // Never made report-only (PinStore+ReportOnly.swift); counted as what they are.
            case .chainNotTrusted, .hostNotExpected, .deniedKey, .transportSecurityNotMet, .revokedByList, .revocationsNeedChain:
                return ("denied", failure.reason.metricName)
            }
        }
    }

    func record(_ result: PinStore.UpdateResult) {
        updates[result]?.increment()
    }
}

extension PinStore.UpdateResult {
    /// The `result` dimension of `pinstore_updates_total`: the name in snake case
    /// (`store_is_empty`), as the dashboards have always read it.
    var metricName: String {
        name.reduce(into: "") { text, character in
            if character.isUppercase { text += "_" + character.lowercased() } else { text.append(character) }
        }
    }
}

extension PinningFailure.Reason {
    /// The `reason` dimension of `pinstore_decisions_total`.
    var metricName: String {
        switch backing {
        case .chainNotTrusted: "chain_not_trusted"
        case .pinMismatch: "pin_mismatch"
        case .noPinsForHost: "no_pins_for_host"
        case .hostNotExpected: "host_not_expected"
        case .issuerPinsNeedChain: "issuer_pins_need_chain"
        case .deniedKey: "denied_key"
        case .transportSecurityNotMet: "transport_security_not_met"
        case .certificateTransparencyNotMet: "certificate_transparency_not_met"
        case .revokedByList: "revoked_by_list"
        case .revocationsNeedChain: "revocations_need_chain"
        case .crlCheckFailed: "crl_check_failed"
        }
    }
}
