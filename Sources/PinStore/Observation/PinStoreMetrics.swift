import CoreMetrics
import Foundation

/// The store's swift-metrics instruments, made once per store so that recording a decision
/// is a counter increment and nothing more. Names and dimensions are listed in README.md.
struct PinStoreMetrics: Sendable {
    /// `pinstore_decisions_total`, one counter per outcome and reason.
    private let allowed: Counter
    private let chainNotTrusted: Counter
    private let pinMismatch: Counter
    private let noPinsForHost: Counter
    private let hostNotExpected: Counter
    private let issuerPinsNeedChain: Counter
    private let deniedKey: Counter
    /// Report-only failures (`outcome="reported"`): the connection went on. Only the reasons
    /// report-only mode relaxes.
    private let reportedPinMismatch: Counter
    private let reportedNoPinsForHost: Counter
    private let reportedIssuerPinsNeedChain: Counter
    private let transportSecurityNotMet: Counter
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
    /// `pinstore_list_expired`: 1 while the list in force is past its own `expires`, else 0.
    let listExpired: Gauge

    static let decisionsLabel = "pinstore_decisions_total"
    static let updatesLabel = "pinstore_updates_total"
    static let saveFailuresLabel = "pinstore_list_save_failures_total"
    static let listAgeLabel = "pinstore_list_age_seconds"
    static let validPinsLabel = "pinstore_valid_pins"
    static let expiredPoliciesLabel = "pinstore_expired_policies"
    static let listExpiredLabel = "pinstore_list_expired"

    init(identifier: String, factory: any MetricsFactory) {
        let store = ("store", identifier)
        func decisions(_ outcome: String, _ reason: String) -> Counter {
            Counter(label: Self.decisionsLabel, dimensions: [store, ("outcome", outcome), ("reason", reason)], factory: factory)
        }
        allowed = decisions("allowed", "pinned")
        chainNotTrusted = decisions("denied", "chain_not_trusted")
        pinMismatch = decisions("denied", "pin_mismatch")
        noPinsForHost = decisions("denied", "no_pins_for_host")
        hostNotExpected = decisions("denied", "host_not_expected")
        issuerPinsNeedChain = decisions("denied", "issuer_pins_need_chain")
        deniedKey = decisions("denied", "denied_key")
        reportedPinMismatch = decisions("reported", "pin_mismatch")
        reportedNoPinsForHost = decisions("reported", "no_pins_for_host")
        reportedIssuerPinsNeedChain = decisions("reported", "issuer_pins_need_chain")
        transportSecurityNotMet = decisions("denied", "transport_security_not_met")
        var updates: [PinStore.UpdateResult: Counter] = [:]
        for result in [PinStore.UpdateResult.ok, .storeIsEmpty, .networkError, .invalidData, .invalidSignature] {
            updates[result] = Counter(label: Self.updatesLabel, dimensions: [store, ("result", result.metricName)], factory: factory)
        }
        self.updates = updates
        saveFailures = Counter(label: Self.saveFailuresLabel, dimensions: [store], factory: factory)
        listAge = Gauge(label: Self.listAgeLabel, dimensions: [store], factory: factory)
        validPins = Gauge(label: Self.validPinsLabel, dimensions: [store], factory: factory)
        expiredPolicies = Gauge(label: Self.expiredPoliciesLabel, dimensions: [store], factory: factory)
        listExpired = Gauge(label: Self.listExpiredLabel, dimensions: [store], factory: factory)
    }

    func record(_ decision: PinningDecision) {
        switch decision {
        case .allow: allowed.increment()
        case .deny(let failure):
            switch failure.reason {
            case .chainNotTrusted: chainNotTrusted.increment()
            case .pinMismatch: pinMismatch.increment()
            case .noPinsForHost: noPinsForHost.increment()
            case .hostNotExpected: hostNotExpected.increment()
            case .issuerPinsNeedChain: issuerPinsNeedChain.increment()
            case .deniedKey: deniedKey.increment()
            case .transportSecurityNotMet: transportSecurityNotMet.increment()
            }
        case .reportOnly(let failure, _):
            switch failure.reason {
            case .pinMismatch: reportedPinMismatch.increment()
            case .noPinsForHost: reportedNoPinsForHost.increment()
            case .issuerPinsNeedChain: reportedIssuerPinsNeedChain.increment()
            // Never made report-only (PinStore+ReportOnly.swift); counted as what they are.
            case .chainNotTrusted: chainNotTrusted.increment()
            case .hostNotExpected: hostNotExpected.increment()
            case .deniedKey: deniedKey.increment()
            case .transportSecurityNotMet: transportSecurityNotMet.increment()
            }
        }
    }

    func record(_ result: PinStore.UpdateResult) {
        updates[result]?.increment()
    }
}

extension PinStore.UpdateResult {
    /// The `result` dimension of `pinstore_updates_total`.
    var metricName: String {
        switch self {
        case .ok: "ok"
        case .storeIsEmpty: "store_is_empty"
        case .networkError: "network_error"
        case .invalidData: "invalid_data"
        case .invalidSignature: "invalid_signature"
        }
    }
}
