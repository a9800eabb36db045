import Foundation

/// The one decision every pinning adapter makes for a TLS connection: first the normal trust
/// evaluation (a chain to the trust roots, validity dates, the host name) with ATS's
/// certificate minimums over the validated chain, then the pin check of that chain against the
/// store.
///
/// ```swift
/// let evaluator = PinningEvaluator(store: store, trustRoots: .system, updateOnEmpty: true)
/// let decision = await evaluator.evaluate(host: "api.example.com", presentedChain: chainDER)
/// guard decision.isAllowed else { closeConnection(); return }
/// ```
///
/// Pinning only ever removes trust: a chain the normal evaluation refuses is denied whatever the
/// pins say, on every path.
public struct PinningEvaluator: Sendable {
    /// The pins.
    public let store: PinStore
    /// The anchors of the normal trust evaluation.
    public let trustRoots: TrustRoots
    /// Whether ``evaluate(host:port:presentedChain:at:)`` runs one forced update when the store has
    /// no pin for the host, and then decides again (what the deployed clients recommend).
    public let updateOnEmpty: Bool
    /// Whether ``evaluate(host:port:presentedChain:at:)`` runs one forced update when the chain is
    /// valid but no pin matches it, and then decides again: a partner's unannounced
    /// certificate rotation is then picked up on the first connection to the new certificate.
    /// An impostor is still refused; it can cause at most one list download a minute.
    public let updateOnMismatch: Bool

    private let validator: ChainValidator

    /// Creates an evaluator.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - trustRoots: The anchors of the normal trust evaluation; the system store by default.
    ///   - updateOnEmpty: Whether a host without pins triggers one forced update first.
    ///   - updateOnMismatch: Whether a valid chain that matches no pin triggers one forced update
    ///     first. Downloads on behalf of refusals (both kinds together) happen at most once a
    ///     minute per store; a download under way is shared.
    public init(store: PinStore, trustRoots: TrustRoots = .system, updateOnEmpty: Bool = true, updateOnMismatch: Bool = true) {
        self.store = store
        self.trustRoots = trustRoots
        self.updateOnEmpty = updateOnEmpty
        self.updateOnMismatch = updateOnMismatch
        self.validator = ChainValidator(trustRoots: trustRoots)
    }

    /// Decides on the chain a server presented, updating the store once first when the host
    /// has no pins (``updateOnEmpty``) or no pin matches (``updateOnMismatch``). The decision
    /// is reported to the store's metrics and ``PinStore/decisions(bufferingNewest:)``.
    ///
    /// - Parameters:
    ///   - host: The host name or IP address the client connected to (not one taken from the
    ///     certificate).
    ///   - port: The TCP port the client connected to, for pin-failure reports.
    ///   - presentedChain: The certificates the server sent (DER), leaf first.
    ///   - time: When validity dates are judged.
    public func evaluate(host: String, port: Int? = nil, presentedChain: [Data], at time: Date = Date()) async -> PinningDecision {
        let first = firstDecision(host: host, presentedChain: presentedChain, at: time)
        guard wantsUpdate(after: first.decision), let validated = first.validatedChain else {
            return report(first.decision, host: host, port: port, presentedChain: presentedChain, validatedChain: first.validatedChain)
        }
        return await decideAfterUpdate(host: host, validatedChain: validated, port: port, presentedChain: presentedChain)
    }

    /// Decides at once from the pins the store holds; never updates (for callers that cannot
    /// wait, such as a synchronous TLS callback). The decision is reported like
    /// ``evaluate(host:port:presentedChain:at:)``'s.
    public func evaluateNow(host: String, port: Int? = nil, presentedChain: [Data], at time: Date = Date()) -> PinningDecision {
        let first = firstDecision(host: host, presentedChain: presentedChain, at: time)
        return report(first.decision, host: host, port: port, presentedChain: presentedChain, validatedChain: first.validatedChain)
    }

    // MARK: - The steps, for adapters that must leave their thread only to update

    /// The normal trust evaluation, then the pin check with the pins held now. Not reported:
    /// finish with ``report(_:host:port:presentedChain:validatedChain:)`` or
    /// ``decideAfterUpdate(host:validatedChain:port:presentedChain:)``.
    package func firstDecision(host: String, presentedChain: [Data], at time: Date) -> (decision: PinningDecision, validatedChain: [Data]?) {
        switch validate(host: host, presentedChain: presentedChain, at: time) {
        case .success(let chain): (Self.pinDecision(store: store, host: host, validatedChain: chain), chain)
        case .failure(let failure): (.deny(failure), nil)
        }
    }

    /// Whether this evaluator updates the store before giving `decision` as final. Never for
    /// a chain the normal evaluation refused: an update cannot make it trusted.
    package func wantsUpdate(after decision: PinningDecision) -> Bool {
        Self.wantsUpdate(after: decision, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch)
    }

    /// One rate-limited forced update, then the pin check again; reported.
    package func decideAfterUpdate(host: String, validatedChain: [Data], port: Int? = nil, presentedChain: [Data] = []) async -> PinningDecision {
        report(await Self.pinDecisionAfterUpdate(store: store, host: host, validatedChain: validatedChain), host: host,
               port: port, presentedChain: presentedChain, validatedChain: validatedChain)
    }

    /// Reports the final decision to the store's metrics, decision stream and (a pin failure)
    /// report URI; returns it. `port`, `presentedChain` and `validatedChain` go into the report.
    @discardableResult
    package func report(_ decision: PinningDecision, host: String, port: Int? = nil, presentedChain: [Data] = [],
                        validatedChain: [Data]? = nil) -> PinningDecision {
        store.record(decision, host: host, port: port, servedChain: presentedChain, validatedChain: validatedChain)
        return decision
    }

    private func validate(host: String, presentedChain: [Data], at time: Date) -> Result<[Data], PinningFailure> {
        do {
            let chain = try validator.validatedDER(chain: presentedChain, hostname: host, at: time)
            guard !chain.isEmpty else {
                // OpenSSL accepted a chain we could not read back: refuse rather than pin nothing.
                return .failure(PinningFailure(host: host, reason: .chainNotTrusted(
                    ChainValidationError(.other, depth: 0, detail: "The verified chain could not be read back."))))
            }
            // ATS's certificate minimums are part of trust: judged on the validated chain (not
            // the presented one), before any pin, here only, so every adapter applies them.
            let requirements = store.transportSecurity.requirements(for: host)
            if requirements.checksCertificateStrength,
               case .failsToMeetPolicy(let violation) = CertificateStrengthPolicy().check(validatedChain: chain) {
                return .failure(PinningFailure(host: host, reason: .transportSecurityNotMet(violation)))
            }
            return .success(chain)
        } catch {
            return .failure(PinningFailure(host: host, reason: .chainNotTrusted(error)))
        }
    }

    /// The pin check alone, over a chain the platform's normal evaluation already validated
    /// (leaf to anchor). Shared with the Apple glue, whose normal evaluation is `SecTrust`.
    ///
    /// The order is the security argument, and it lives here only:
    /// 1. trust: `validatedChain` exists only once the normal trust evaluation accepted it
    ///    and it met ATS's certificate minimums (``CertificateStrengthPolicy``, applied in
    ///    `validate`, right after chain validation; the Apple glue leaves them to ATS itself);
    /// 2. expected hosts: a host outside ``PinStore/Configuration/expectedCommonNames`` is refused;
    /// 3. deny pins: a denied key anywhere in the chain refuses, whatever else matches;
    /// 4. the pin rules: allowed when at least one pin that applies to the host (list entries
    ///    and static policies together) matches the chain.
    ///
    /// Then the two ways a pin failure may end other than in a refusal (PinStore+ReportOnly.swift):
    /// a host without pins that the signed challenge-mode list says needs none is allowed
    /// (``DomainsConfig``), and a pin mismatch or a host without pins whose pins run report-only
    /// goes on as ``PinningDecision/reportOnly(_:validatedChain:)``. Steps 1 to 3 are never relaxed.
    static func pinDecision(store: PinStore, host: String, validatedChain: [Data]) -> PinningDecision {
        let pinHost = pinHostName(host)
        if let expected = store.expectedNames, !expected.contains(HostName.normalized(pinHost)) {
            return .deny(PinningFailure(host: host, reason: .hostNotExpected))
        }
        guard !store.staticPins.isEmpty else {
            // No policy and no deny pin: steps 3 and 4 are the list alone.
            switch store.validate(commonName: pinHost, certificateChain: validatedChain) {
            case .trusted:
                return .allow(validatedChain: validatedChain)
            case .untrusted:
                return store.pinFailureDecision(PinningFailure(host: host, reason: .pinMismatch,
                                                               details: ValidatedChain(validated: validatedChain).map { store.mismatchReport(host: pinHost, chain: $0) }),
                                                enforcing: store.listPinsEnforced, validatedChain: validatedChain)
            case .empty:
                return unpinnedDecision(store: store, host: host, lookupKey: HostName.lookupKey(pinHost), validatedChain: validatedChain)
            }
        }
        guard let chain = ValidatedChain(validated: validatedChain) else {
            // Never skip the rules for a chain we cannot read: refuse.
            return .deny(PinningFailure(host: host, reason: .chainNotTrusted(
                ChainValidationError(.malformedCertificate, depth: 0, detail: "The verified chain could not be read back for the pin rules."))))
        }
        guard let lookupKey = HostName.lookupKey(pinHost) else {
            return .deny(PinningFailure(host: host, reason: .pinMismatch))
        }
        switch store.checkRules(host: lookupKey, chain: chain) {
        case .denied(let depth):
            return .deny(PinningFailure(host: host, reason: .deniedKey(depth: depth), details: store.mismatchReport(host: lookupKey, chain: chain)))
        case .trusted:
            return .allow(validatedChain: validatedChain)
        case .mismatch(let enforcing):
            return store.pinFailureDecision(PinningFailure(host: host, reason: .pinMismatch, details: store.mismatchReport(host: lookupKey, chain: chain)),
                                            enforcing: enforcing, validatedChain: validatedChain)
        case .noPins, .expiredPoliciesOnly:
            // An expired policy stops applying; the host is then as unpinned as one whose list
            // pins expired: refused (fail closed; a clock moved forward must not open hosts).
            return unpinnedDecision(store: store, host: host, lookupKey: lookupKey, validatedChain: validatedChain)
        }
    }

    /// A host nothing pins, after trust, expected hosts and deny pins passed: allowed when the
    /// signed challenge-mode list says the host needs no pins (``DomainsConfig``), reported when
    /// hosts without pins run report-only, refused otherwise.
    private static func unpinnedDecision(store: PinStore, host: String, lookupKey: String?, validatedChain: [Data]) -> PinningDecision {
        if let lookupKey, store.serverRequiresNoPins(for: lookupKey) {
            return .allow(validatedChain: validatedChain)
        }
        return store.pinFailureDecision(PinningFailure(host: host, reason: .noPinsForHost(updateResult: nil)),
                                        enforcing: store.listPinsEnforced, validatedChain: validatedChain)
    }

    /// The refresh rule every adapter follows: a host without pins, or a valid chain that
    /// matches none, may mean the list changed since it was loaded.
    /// Report-only failures too: the update still happens before the final decision.
    static func wantsUpdate(after decision: PinningDecision, updateOnEmpty: Bool, updateOnMismatch: Bool) -> Bool {
        guard let failure = decision.failure ?? decision.reportedFailure else { return false }
        switch failure.reason {
        case .noPinsForHost: return updateOnEmpty
        case .pinMismatch: return updateOnMismatch
        case .chainNotTrusted, .hostNotExpected, .issuerPinsNeedChain, .deniedKey, .transportSecurityNotMet: return false
        }
    }

    /// ``PinStore/updateAfterRefusal()`` (at most one download a minute on behalf of refusals;
    /// one under way is shared), then the pin check again.
    static func pinDecisionAfterUpdate(store: PinStore, host: String, validatedChain: [Data]) async -> PinningDecision {
        // A download that ended since the first decision (the scheduled one a request started,
        // say) may have brought the pins already: look again first, and download only if the
        // list is still the one this look saw.
        let generation = store.listGeneration
        let recheck = pinDecision(store: store, host: host, validatedChain: validatedChain)
        if case .allow = recheck { return recheck }
        let updateResult = await store.updateAfterRefusal(decidedUnder: generation)
        let second = pinDecision(store: store, host: host, validatedChain: validatedChain)
        switch second {
        case .deny(let again) where again.reason.isNoPinsForHost:
            return .deny(PinningFailure(host: host, reason: .noPinsForHost(updateResult: updateResult)))
        case .reportOnly(let again, let chain) where again.reason.isNoPinsForHost:
            return .reportOnly(PinningFailure(host: host, reason: .noPinsForHost(updateResult: updateResult)), validatedChain: chain)
        default:
            return second
        }
    }

    /// The name pins are looked up by: an IPv6 literal without its brackets.
    private static func pinHostName(_ host: String) -> String {
        if host.hasPrefix("["), host.hasSuffix("]") { return String(host.dropFirst().dropLast()) }
        return host
    }
}
