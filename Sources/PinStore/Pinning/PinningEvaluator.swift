import Foundation

/// The one decision every pinning adapter makes for a TLS connection: first the normal trust
/// evaluation (a chain to the trust roots, validity dates, the host name), then the pin check
/// of the validated chain against the store.
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
    /// Whether ``evaluate(host:presentedChain:at:)`` runs one forced, blocking
    /// ``PinStore/update(mode:)`` when the store has no pin for the host, and then decides
    /// again (what the deployed clients recommend). Concurrent callers share one download.
    public let updateOnEmpty: Bool

    private let validator: ChainValidator

    /// Creates an evaluator.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - trustRoots: The anchors of the normal trust evaluation; the system store by default.
    ///   - updateOnEmpty: Whether a host without pins triggers one blocking update first (at most
    ///     one download a minute on behalf of such hosts; a download under way is shared).
    public init(store: PinStore, trustRoots: TrustRoots = .system, updateOnEmpty: Bool = false) {
        self.store = store
        self.trustRoots = trustRoots
        self.updateOnEmpty = updateOnEmpty
        self.validator = ChainValidator(trustRoots: trustRoots)
    }

    /// Decides on the chain a server presented, updating the store first when
    /// ``updateOnEmpty`` is set and the host has no pins.
    ///
    /// - Parameters:
    ///   - host: The host name or IP address the client connected to (not one taken from the
    ///     certificate).
    ///   - presentedChain: The certificates the server sent (DER), leaf first.
    ///   - time: When validity dates are judged.
    public func evaluate(host: String, presentedChain: [Data], at time: Date = Date()) async -> PinningDecision {
        let validated: [Data]
        switch validate(host: host, presentedChain: presentedChain, at: time) {
        case .success(let chain): validated = chain
        case .failure(let failure): return .deny(failure)
        }
        return await Self.pinDecision(store: store, host: host, validatedChain: validated, updatingOnEmpty: updateOnEmpty)
    }

    /// Decides at once from the pins the store holds; never updates (for callers that cannot
    /// wait, such as a synchronous TLS callback).
    public func evaluateNow(host: String, presentedChain: [Data], at time: Date = Date()) -> PinningDecision {
        switch validate(host: host, presentedChain: presentedChain, at: time) {
        case .success(let chain): Self.pinDecision(store: store, host: host, validatedChain: chain)
        case .failure(let failure): .deny(failure)
        }
    }

    private func validate(host: String, presentedChain: [Data], at time: Date) -> Result<[Data], PinningFailure> {
        do {
            let chain = try validator.validatedDER(chain: presentedChain, hostname: host, at: time)
            guard !chain.isEmpty else {
                // OpenSSL accepted a chain we could not read back: refuse rather than pin nothing.
                return .failure(PinningFailure(host: host, reason: .chainNotTrusted(
                    ChainValidationError(.other, depth: 0, detail: "The verified chain could not be read back."))))
            }
            return .success(chain)
        } catch {
            return .failure(PinningFailure(host: host, reason: .chainNotTrusted(error)))
        }
    }

    /// The pin check alone, over a chain the platform's normal evaluation already validated
    /// (leaf to anchor). Shared with the Apple glue, whose normal evaluation is `SecTrust`.
    static func pinDecision(store: PinStore, host: String, validatedChain: [Data]) -> PinningDecision {
        let pinHost = pinHostName(host)
        if let expected = store.expectedNames, !expected.contains(HostName.normalized(pinHost)) {
            return .deny(PinningFailure(host: host, reason: .hostNotExpected))
        }
        switch store.validate(commonName: pinHost, certificateChain: validatedChain) {
        case .trusted:
            return .allow(validatedChain: validatedChain)
        case .untrusted:
            return .deny(PinningFailure(host: host, reason: .pinMismatch))
        case .empty:
            return .deny(PinningFailure(host: host, reason: .noPinsForHost(updateResult: nil)))
        }
    }

    /// ``pinDecision(store:host:validatedChain:)``, with one forced update when the host has no pins.
    static func pinDecision(store: PinStore, host: String, validatedChain: [Data], updatingOnEmpty: Bool) async -> PinningDecision {
        let first = pinDecision(store: store, host: host, validatedChain: validatedChain)
        guard updatingOnEmpty, case .deny(let failure) = first, case .noPinsForHost = failure.reason else {
            return first
        }
        // At most one download a minute on behalf of unpinned hosts (a download under way is
        // shared): the answer for them will not change faster than the list does.
        let updateResult = await store.updateAfterRefusal()
        let second = pinDecision(store: store, host: host, validatedChain: validatedChain)
        if case .deny(let again) = second, case .noPinsForHost = again.reason {
            return .deny(PinningFailure(host: host, reason: .noPinsForHost(updateResult: updateResult)))
        }
        return second
    }

    /// The name pins are looked up by: an IPv6 literal without its brackets.
    private static func pinHostName(_ host: String) -> String {
        if host.hasPrefix("["), host.hasSuffix("]") { return String(host.dropFirst().dropLast()) }
        return host
    }
}
