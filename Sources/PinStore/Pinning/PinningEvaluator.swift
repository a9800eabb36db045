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
        // Chains through the app's own anchors are exempt from Certificate Transparency
        // (``PinStore/Configuration/certificateTransparencyForPrivateAnchors``): the store
        // learns them from every evaluator made with it.
        store.certificateTransparency.registerPrivateAnchors(of: trustRoots)
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
        await begin(host: host, port: port, presentedChain: presentedChain, at: time).decision()
    }

    /// Decides at once from the pins the store holds; never updates (for callers that cannot
    /// wait, such as a synchronous TLS callback). The decision is reported like
    /// ``evaluate(host:port:presentedChain:at:)``'s.
    public func evaluateNow(host: String, port: Int? = nil, presentedChain: [Data], at time: Date = Date()) -> PinningDecision {
        let now = PinningEvaluator(store: store, trustRoots: trustRoots, updateOnEmpty: false, updateOnMismatch: false)
        switch now.begin(host: host, port: port, presentedChain: presentedChain, at: time) {
        case .decided(let decision):
            return decision
        case .updateFirst(let pending):
            // CRLs not fetched yet: decided from what is cached (unavailable, never "not revoked").
            return pending.decideWithoutWaiting()
        }
    }

    /// The one step every chain-aware adapter takes: the normal trust evaluation, then the pin
    /// rules (``PinningRules``), then either the reported decision or the update that may turn
    /// a refusal around. Synchronous up to the update, so a TLS callback can run it on its
    /// event loop and leave only for ``PendingPinningDecision/decideAfterUpdate()``.
    package func begin(host: String, port: Int? = nil, presentedChain: [Data], at time: Date) -> PinningStep {
        beginKeepingProof(host: host, port: port, presentedChain: presentedChain, at: time).step
    }

    /// ``begin(host:port:presentedChain:at:)``, with the proof the trust evaluation made: the
    /// ``ValidatedChain`` and the ``HostName`` it was validated for (nil when trust refused the
    /// chain). An adapter that keeps the connection keeps these, and re-checks it with them
    /// (``AdmissionGate``) rather than with bytes.
    package func beginKeepingProof(host: String, port: Int? = nil, presentedChain: [Data],
                                   at time: Date) -> (step: PinningStep, proof: (host: HostName, chain: ValidatedChain)?) {
        let name: HostName
        let chain: ValidatedChain
        switch validate(host: host, presentedChain: presentedChain, at: time) {
        case .success(let validated):
            (name, chain) = validated
        case .failure(let failure):
            let decision = PinningDecision.deny(failure)
            store.record(decision, host: host, port: port, servedChain: presentedChain, validatedChain: nil)
            return (.decided(decision), nil)
        }
        let step = Self.step(store: store, host: name, requestedName: host, port: port, servedChain: presentedChain,
                             validatedChain: chain, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch)
        return (step, (name, chain))
    }

    /// The pin rules over a chain the platform's normal evaluation validated (ours, or
    /// `SecTrust` for the Apple glue), then the report or the update first.
    static func step(store: PinStore, host: HostName, requestedName: String, port: Int?, servedChain: [Data],
                     validatedChain chain: ValidatedChain, updateOnEmpty: Bool, updateOnMismatch: Bool) -> PinningStep {
        // The CRLs the chain needs and the cache lacks are fetched (within the budget) before
        // the synchronous rules read them.
        let prepare = store.crl.preparation(host: host, chain: chain, list: store.state.withLock { $0.list.crl })
        return store.step(updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, prepare: prepare, report: { decision in
            store.record(decision, host: requestedName, port: port, servedChain: servedChain, validatedChain: chain.certificates)
        }, decide: {
            store.pinDecision(host: host, requestedName: requestedName, evidence: .validated(chain))
        })
    }

    /// Step 0 of ``PinningRules``: the host name made once, the normal trust evaluation, and
    /// ATS's certificate minimums over the validated chain.
    private func validate(host: String, presentedChain: [Data], at time: Date) -> Result<(HostName, ValidatedChain), PinningFailure> {
        guard let name = try? HostName(host) else {
            return .failure(PinningFailure(host: host, reason: .chainNotTrusted(
                ChainValidationError(.hostnameMismatch, depth: 0, detail: HostName.problem(host)))))
        }
        do {
            let der = try validator.validatedDER(chain: presentedChain, hostname: name.text, at: time)
            guard let chain = ValidatedChain(trustEvaluationOutput: der) else {
                // OpenSSL accepted a chain we could not read back: refuse rather than pin nothing.
                return .failure(PinningFailure(host: host, reason: .chainNotTrusted(
                    ChainValidationError(.other, depth: 0, detail: "The verified chain could not be read back."))))
            }
            // ATS's certificate minimums are part of trust: judged on the validated chain (not
            // the presented one), before any pin, here only, so every adapter applies them.
            let requirements = store.transportSecurity.requirements(for: name.text)
            if requirements.checksCertificateStrength,
               case .failsToMeetPolicy(let violation) = CertificateStrengthPolicy().check(validatedChain: der) {
                return .failure(PinningFailure(host: host, reason: .transportSecurityNotMet(violation)))
            }
            return .success((name, chain))
        } catch {
            return .failure(PinningFailure(host: host, reason: .chainNotTrusted(error)))
        }
    }
}
