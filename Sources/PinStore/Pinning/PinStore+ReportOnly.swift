import Foundation
import Logging

// Report-only (audit) mode. It is applied by ``ReportOnlyRelaxation`` only, after the rules whose
// order is the security argument (``PinningRules``), for every adapter.
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
// - never the signed list's revocations (`revokedByList`, `revocationsNeedChain`): a revoked
//   certificate is the team's signed word that its key is in the wrong hands;
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
    /// hosts, deny pins and the signed list's revocations are still enforced. A pin failure lets the connection go on as
    /// ``PinningDecision/reportOnly(_:validatedChain:)``: counted with `outcome="reported"`,
    /// delivered to ``PinStore/decisions(bufferingNewest:)`` with ``PinningEvent/enforced`` false,
    /// and logged at debug level. Updates after a failure (`updateOnEmpty`, `updateOnMismatch`)
    /// still run first.
    ///
    /// A closed set: everything enforced, the list's pins reported, or everything reported.
    /// Finer choices are per source (``PinPolicy/reportOnly``, ``CertificateTransparencyMode``),
    /// not new modes.
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
    /// The debug line of a failure that only reports (refusals and reported failures alike go to
    /// the metrics and the decision stream; a log line above debug would let one host flood the
    /// logs). The message says what was allowed: a pin failure in report-only mode, a CRL soft
    /// fail ("revocation status unknown"), a check in report-only mode.
    func logReportOnly(_ decision: PinningDecision, host: String) {
        guard let failure = decision.reportedFailure else { return }
        logger.debug("\(failure.allowedBecause)", metadata: [
            "pinstore.host": "\(host)",
            "pinstore.reason": "\(failure.summary)",
        ])
    }
}

extension PinningFailure.Reason {
    /// Whether this is ``noPinsForHost(updateResult:)``, whatever the update result.
    var isNoPinsForHost: Bool {
        code == .noPinsForHost
    }
}
