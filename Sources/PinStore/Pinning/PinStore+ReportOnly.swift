import Foundation
import Logging

// Report-only (audit) mode and the server's per-domain switch: the two ways a pin failure can
// end other than in a refusal. Both are applied here only, by `PinningEvaluator.pinDecision`
// (chain-aware adapters and the Apple glue) and the leaf rule (`PinStore+LeafPins.swift`,
// AsyncHTTPClient), after the steps whose order is the security argument.
//
// What report-only relaxes, and what it never does:
// - a pin mismatch (`pinMismatch`), a host without pins (`noPinsForHost`), and an issuer pin the
//   leaf-only adapter cannot prove (`issuerPinsNeedChain`): these are the failures a team rolling
//   pins out wants to learn about before enforcing;
// - never the normal trust evaluation (`chainNotTrusted`): pinning only ever strengthens it;
// - never deny pins (`deniedKey`): a denied key is a known-compromised key or an interception
//   product, never a legitimate rotation, and auditing it would let exactly that attacker in;
// - never expected hosts (`hostNotExpected`): that is the app's own closed list of hosts, written
//   in code, not pins that may lag behind a rotation;
// - never the ATS transport minimums (`transportSecurityNotMet`): they are part of the trust a
//   connection must earn before pins are looked at; relax them per domain with an exception.

extension PinStore.Configuration {
    /// Whether pin failures refuse the connection or are only reported (audit mode, TrustKit's
    /// `enforcePinning = NO`, HPKP's `Public-Key-Pins-Report-Only`).
    ///
    /// ```swift
    /// var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey)
    /// configuration.enforcement = .reportOnly       // learn what would break, then enforce
    /// ```
    ///
    /// In report-only mode the normal trust evaluation still refuses what it refuses, and expected
    /// hosts and deny pins are still enforced. A pin failure lets the connection go on as
    /// ``PinningDecision/reportOnly(_:validatedChain:)``: counted with `outcome="reported"`,
    /// delivered to ``PinStore/decisions(bufferingNewest:)`` with ``PinningEvent/enforced`` false,
    /// and logged at debug level. Updates after a failure (`updateOnEmpty`, `updateOnMismatch`)
    /// still run first.
    public enum Enforcement: Sendable, Hashable {
        /// Every pin failure refuses the connection. The default.
        case enforced
        /// The signed list's pins (downloaded and fallback) run report-only, and so do hosts
        /// without pins; static policies still enforce unless they are report-only themselves
        /// (``PinPolicy/reportOnly``). A host pinned by an enforcing policy and the list is
        /// enforced: any enforcing source enforces.
        case listReportOnly
        /// Every pin failure of every host is reported, never enforced.
        case reportOnly
    }
}

extension PinPolicy {
    /// Creates a policy, choosing whether it runs report-only (see ``reportOnly``).
    public init(domain: String, includesSubdomains: Bool = false, pins: [PinIdentity], expiration: Date? = nil,
                requiresMatchInEachCategory: Bool = false, reportOnly: Bool) {
        self.init(domain: domain, includesSubdomains: includesSubdomains, pins: pins, expiration: expiration,
                  requiresMatchInEachCategory: requiresMatchInEachCategory)
        self.reportOnly = reportOnly
    }
}

extension PinStore {
    /// Whether the list's pins, and hosts without any pin, are enforced.
    var listPinsEnforced: Bool {
        configuration.enforcement == .enforced
    }

    /// The final form of a pin failure over a chain the normal evaluation validated: a refusal,
    /// or (report-only) a connection that goes on with the failure reported.
    ///
    /// - Parameter enforcing: Whether any pin source that applied to the host enforces (the
    ///   list: ``listPinsEnforced``; a policy: not ``PinPolicy/reportOnly``). For a host without
    ///   pins, ``listPinsEnforced``.
    func pinFailureDecision(_ failure: PinningFailure, enforcing: Bool, validatedChain: [Data]) -> PinningDecision {
        guard Self.reportOnlyMayRelax(failure.reason),
              configuration.enforcement == .reportOnly || !enforcing else { return .deny(failure) }
        return .reportOnly(failure, validatedChain: validatedChain)
    }

    /// The failures report-only mode may let through (see the top of this file for why).
    static func reportOnlyMayRelax(_ reason: PinningFailure.Reason) -> Bool {
        switch reason {
        case .pinMismatch, .noPinsForHost, .issuerPinsNeedChain: true
        case .chainNotTrusted, .hostNotExpected, .deniedKey, .transportSecurityNotMet: false
        }
    }

    /// Whether the signed challenge-mode list in force says `host` (a lookup key) needs no pins
    /// (``DomainsConfig``). Only asked for a host the store holds no pin for.
    func serverRequiresNoPins(for host: String) -> Bool {
        guard let config = state.withLock({ $0.stored?.domainsConfig }) else { return false }
        return !config.pinningRequired(for: host)
    }

    /// ``serverRequiresNoPins(for:)`` for the leaf-only adapter, which does not know the
    /// requested host: true only when no host any of the leaf's names can serve needs pins.
    func serverRequiresNoPins(forLeafNames names: [String]) -> Bool {
        guard let config = state.withLock({ $0.stored?.domainsConfig }), !names.isEmpty else { return false }
        return names.allSatisfy { !config.pinningRequired(forCertificateName: $0) }
    }

    /// The debug line of a report-only failure (refusals and report-only failures alike go to the
    /// metrics and the decision stream; a log line above debug would let one host flood the logs).
    func logReportOnly(_ decision: PinningDecision, host: String) {
        guard let failure = decision.reportedFailure else { return }
        logger.debug("pin check failed; connection allowed in report-only mode", metadata: [
            "pinstore.host": "\(host)",
            "pinstore.reason": "\(failure.summary)",
        ])
    }
}

extension PinningFailure.Reason {
    /// Whether this is ``noPinsForHost(updateResult:)``, whatever the update result.
    var isNoPinsForHost: Bool {
        if case .noPinsForHost = self { return true }
        return false
    }
}

extension PinStore {
    /// Whether a pooled connection admitted with `validatedChain` for `host` may still carry
    /// requests under the list in force: the pin decision again (not reported), so a connection
    /// admitted in report-only mode or by ``DomainsConfig`` is kept exactly as long as a new
    /// connection would be admitted.
    package func stillAdmits(host: String, validatedChain: [Data]) -> Bool {
        PinningEvaluator.pinDecision(store: self, host: host, validatedChain: validatedChain).isAllowed
    }
}
