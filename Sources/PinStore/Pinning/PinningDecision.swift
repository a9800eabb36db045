import Foundation
/// What a pinning adapter does with a connection: go on with it, or end it before a single
/// request byte is sent.
///
/// ```swift
/// switch await evaluator.evaluate(host: "api.example.com", presentedChain: chainDER) {
/// case .allow: break                                  // continue the handshake
/// case .deny(let failure): logger.debug("\(failure)") // close the connection (metrics and
///                                                     // store.decisions() see it too)
/// case .reportOnly: break                             // continue: a failure that only
///                                                     // reports (report-only pins, a CRL
///                                                     // soft fail), already reported
/// }
/// ```
///
/// A closed set, on purpose: every adapter must decide what each answer does to a connection,
/// and a new answer it did not know could be let through silently. Adding one would be a
/// breaking release. Why a connection was refused grows in ``PinningFailure/Reason``.
public enum PinningDecision: Sendable, Hashable, CustomStringConvertible {
    /// The chain passed the normal trust evaluation and a pin for the host matches it.
    /// `validatedChain` holds the DER certificates from the leaf to the trust anchor, as
    /// verified (parse one with ``X509Certificate/init(derRepresentation:)`` when needed).
    case allow(validatedChain: [Data])
    /// The connection must not be used; the failure says why and what to do.
    case deny(PinningFailure)
    /// Allowed with a failure that only reports: the chain passed the normal trust evaluation,
    /// a later check failed, and that check was not to refuse. The connection goes on; the
    /// failure is reported to the metrics (`outcome="reported"`),
    /// ``PinStore/decisions(bufferingNewest:)`` (with ``PinningEvent/enforced`` false), the
    /// pin-failure reports and a debug log line. `validatedChain` is as in
    /// ``allow(validatedChain:)``.
    ///
    /// The failure's ``PinningFailure/reason`` says which of these it was (and ``description``
    /// says it in words):
    /// - a pin failure (``PinningFailure/Reason/pinMismatch``, ``PinningFailure/Reason/noPinsForHost(updateResult:)``,
    ///   ``PinningFailure/Reason/issuerPinsNeedChain``) under report-only pins
    ///   (``PinStore/Configuration/enforcement``, ``PinPolicy/reportOnly``) (a host the signed
    ///   list's `domainsConfig` exempts from pins is ``allow(validatedChain:)``, not this);
    /// - revocation status unknown: ``PinningFailure/Reason/crlCheckFailed(_:)`` with a CRL that
    ///   could not be had (``CRLCheckFailure/unavailable``) for a host under
    ///   ``CRLCheckMode/enforceSoftFail`` (it fails open) or ``CRLCheckMode/reportOnly``;
    /// - a check whose mode only reports: a revoked certificate under
    ///   ``CRLCheckMode/reportOnly``, ``PinningFailure/Reason/certificateTransparencyNotMet(_:)``
    ///   under ``CertificateTransparencyMode/reportOnly``.
    ///
    /// Never the normal trust evaluation, expected hosts, deny pins, the signed list's
    /// revocations, the ATS minimums, or a CRL under ``CRLCheckMode/enforceHardFail``.
    case reportOnly(PinningFailure, validatedChain: [Data])

    /// Whether the connection may go on (``allow(validatedChain:)`` or ``reportOnly(_:validatedChain:)``).
    public var isAllowed: Bool {
        if case .deny = self { return false }
        return true
    }

    /// The reason for a denial; nil when the connection may go on (also in report-only mode:
    /// see ``reportedFailure``).
    public var failure: PinningFailure? {
        if case .deny(let failure) = self { return failure }
        return nil
    }

    /// The failure a ``reportOnly(_:validatedChain:)`` decision let through (a pin failure in
    /// report-only mode, a CRL soft fail, ...: see that case); nil otherwise.
    public var reportedFailure: PinningFailure? {
        if case .reportOnly(let failure, _) = self { return failure }
        return nil
    }

    /// The validated chain (leaf to anchor) of a connection that may go on; nil for a denial.
    public var validatedChain: [Data]? {
        switch self {
        case .allow(let chain), .reportOnly(_, let chain): chain
        case .deny: nil
        }
    }

    /// A one-line summary for logs (a failure's ``PinningFailure/details`` are left out: read
    /// them from ``failure`` or ``reportedFailure``).
    public var description: String {
        switch self {
        case .allow(let chain):
            "allowed: \(chain.first.flatMap { try? X509Certificate(derRepresentation: $0) }?.subject ?? "?") is trusted and pinned"
        case .deny(let failure):
            "denied: \(failure.summary)"
        case .reportOnly(let failure, _):
            "\(failure.allowedBecause): \(failure.summary)"
        }
    }
}

extension PinningFailure {
    /// What a ``PinningDecision/reportOnly(_:validatedChain:)`` decision with this failure
    /// did, in words: the decision's description and the store's debug line start with it.
    var allowedBecause: String {
        switch reason.backing {
        case .crlCheckFailed(let failure) where !failure.isRevoked:
            "allowed, revocation status unknown (the CRL could not be had; the host's CRL mode lets the connection through)"
        case .crlCheckFailed:
            "allowed, revoked certificate reported only (the host's CRL mode is reportOnly)"
        case .certificateTransparencyNotMet:
            "allowed, Certificate Transparency not met, reported only (the host's CT mode is reportOnly)"
        default:
            "allowed in report-only mode, pin check failed"
        }
    }
}

/// Why a connection was refused by pinning or by the normal trust evaluation before it.
///
/// The ``description`` is written for the person reading the log: what happened and what to do.
/// Match on ``reason`` in code (a minor release may add reasons, so keep a `default`):
///
/// ```swift
/// switch failure.reason.code {
/// case .pinMismatch: alertSecurityTeam(failure)
/// case .noPinsForHost: scheduleUpdate()
/// default: logger.debug("\(failure)")
/// }
/// if failure.reason == .pinMismatch { alertSecurityTeam(failure) }
/// ```
public struct PinningFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host name (or IP address) the client connected to.
    public let host: String
    /// The kind of failure.
    public let reason: Reason

    /// For pin refusals: the validated chain (`sha256/<SPKI>`, subject, certificate
    /// fingerprint, leaf first) and the pins that applied to the host, so an operator can fix
    /// the list. Part of ``description``.
    public let details: String?

    /// Creates a failure for `host`.
    public init(host: String, reason: Reason, details: String? = nil) {
        self.host = host
        self.reason = reason
        self.details = details
    }

    /// What happened and what to do next, for the person reading the log.
    public var description: String {
        guard let details else { return summary }
        return summary + "\n" + details
    }

    /// ``description`` without ``details``: one line, for tables and one-line logs.
    public var summary: String {
        switch reason.backing {
        case .chainNotTrusted(let error):
            return "\(host): the certificate chain is not trusted (\(error.reason.name) at depth \(error.depth): \(error.detail)). "
                + "Pinning never relaxes the normal trust evaluation: fix the server's certificate or configure its CA as a trust anchor."
        case .pinMismatch:
            return "\(host): the server's certificate chain matches none of the pins for this host. "
                + "Either its certificate changed without its fingerprint being published in the signed list "
                + "(publish it, then update the store), or the connection is being intercepted."
        case .noPinsForHost(let updateResult):
            var text = "\(host): the store holds no valid pin for this host, so the connection is refused. "
                + "Add the host to the signed list, or update the store before connecting (PinStore.update(), or updateOnEmpty)."
            if let updateResult {
                text += " An update was tried first and ended with \(updateResult)."
            }
            return text
        case .hostNotExpected:
            return "\(host) is not among the store's expectedCommonNames, so no certificate can be trusted for it. "
                + "Add it to expectedCommonNames if it should be pinned."
        case .issuerPinsNeedChain:
            return "\(host): the host is pinned by issuer (intermediate or root) pins, which this adapter cannot check: "
                + "AsyncHTTPClient exposes only the server's leaf certificate, never the verified chain. "
                + "Call this host through PinStoreNIO (the pinned URLSession or PinningTLSVerifier), or publish a leaf pin for it."
        case .transportSecurityNotMet(let violation):
            return "\(host): the connection does not meet the transport minimum \(violation). " + violation.remedy
        case .certificateTransparencyNotMet(let violation):
            let remedy = violation.problem == .needsValidatedChain
                ? "Call this host through PinStoreNIO (the pinned URLSession or PinningTLSVerifier), which see the validated chain."
                : "Ask the partner for a certificate logged to the logs the signed list names, or add its logs to the list."
            return "\(host): the certificate does not meet Certificate Transparency: \(violation). " + remedy
        case .revokedByList(let match):
            return "\(host): the certificate at depth \(match.depth) of the validated chain is revoked by the signed list (\(match)), "
                + "so the connection is refused whatever pin matches, in report-only mode too. The server needs a new certificate and key."
        case .revocationsNeedChain:
            return "\(host): the signed list revokes certificates or keys this adapter cannot rule out from the server's leaf alone, "
                + "so the connection is refused rather than left unchecked. Call this host through PinStoreNIO (the pinned URLSession "
                + "or PinningTLSVerifier), which see the validated chain, or mark the list's leaf revocations \"leaf\": true."
        case .crlCheckFailed(let failure):
            let remedy = failure.isRevoked
                ? "The CA revoked it (a stolen key, mis-issuance): the partner must install a new certificate."
                : failure.unavailable?.code == .needsValidatedChain
                    ? "Call this host through PinStoreNIO (the pinned URLSession or PinningTLSVerifier), which see the validated chain."
                    : "Check that the CA's CRL server is reachable from here; the host's CRL mode decides whether this refuses."
            return "\(host): CRL check: \(failure). " + remedy
        case .deniedKey(let depth):
            return "\(host): the certificate at depth \(depth) of the validated chain has a denied public key (deniedPublicKeys), "
                + "so the connection is refused whatever else matches. A compromised key or an interception product is in the path."
        }
    }
}
