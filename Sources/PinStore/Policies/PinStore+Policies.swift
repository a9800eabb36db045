import Foundation

extension PinStore {
    /// What the rules after trust and expected hosts say about a validated chain.
    enum RuleOutcome: Sendable, Equatable {
        /// A pin that applies to the host matches.
        case trusted
        /// Pins apply to the host, none matches. `enforcing`: whether any source that applied
        /// enforces (the list unless it runs report-only; a policy unless ``PinPolicy/reportOnly``).
        case mismatch(enforcing: Bool)
        /// Nothing pins the host.
        case noPins
        /// The key at `depth` is denied.
        case denied(depth: Int)
        /// Only expired static policies cover the host: they no longer apply, and the host is
        /// refused as unpinned.
        case expiredPoliciesOnly
    }

    /// Deny pins, then the pin rules (steps 3 and 4 of ``PinningEvaluator``'s order) for
    /// `host` (a lookup key). The one rule: a chain is allowed when at least one pin that
    /// applies to the host matches it, list entries and static policies together.
    func checkRules(host: String, chain: ValidatedChain) -> RuleOutcome {
        if let depth = staticPins.deniedDepth(in: chain) { return .denied(depth: depth) }
        let list = validateAgainstList(commonName: host, certificateChain: chain.certificates)
        if list == .trusted { return .trusted }
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let (applying, expired) = staticPins.policies(for: host, now: now)
        for policy in applying where policy.admits(chain) { return .trusted }
        if list == .untrusted || !applying.isEmpty {
            return .mismatch(enforcing: (list == .untrusted && listPinsEnforced) || applying.contains { !$0.policy.reportOnly })
        }
        return expired.isEmpty ? .noPins : .expiredPoliciesOnly
    }

    /// ``validate(commonName:certificateChain:)`` when static policies or deny pins exist.
    func validateWithPolicies(commonName: String, certificateChain: [Data]) -> ValidationResult {
        guard let host = HostName.lookupKey(commonName), let chain = ValidatedChain(validated: certificateChain) else { return .untrusted }
        if let expectedNames, !expectedNames.contains(host) { return .untrusted }
        switch checkRules(host: host, chain: chain) {
        case .trusted: return .trusted
        case .mismatch, .denied: return .untrusted
        case .noPins, .expiredPoliciesOnly: return .empty
        }
    }

    /// The failure text of a refusal, modelled on OkHttp's: the validated chain and the pins
    /// that applied to `host`.
    func mismatchReport(host: String, chain: ValidatedChain) -> String {
        var lines = ["  Validated certificate chain (leaf first):"]
        lines += chain.summary.map { "    " + $0 }
        lines.append("  Pins that applied to \(host):")
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let stored = state.withLock { $0.stored?.index }
        var any = false
        for (index, source) in [(stored, "signed list"), (fallbackIndex, "fallback list")] {
            guard let index, let key = HostName.lookupKey(host) else { continue }
            index.forEachPin(matching: key) { pin in
                if now < pin.expires {
                    lines.append("    certificate \(pin.fingerprint.data.base64EncodedString()) at depth \(pin.depth) (\(source))")
                    any = true
                }
                return false
            }
        }
        for policy in staticPins.policies(for: host, now: now).applying {
            for identity in policy.policy.pins { lines.append("    \(identity) (policy \(policy.policy.domain))") }
            any = true
        }
        if !staticPins.denied.isEmpty {
            lines.append("  Denied keys (any host): " + staticPins.denied.map { "sha256/" + $0.data.base64EncodedString() }.joined(separator: ", "))
        }
        if !any { lines.append("    (none)") }
        return lines.joined(separator: "\n")
    }

    /// Logs a warning for every static policy already expired (at every start) and sets the
    /// `pinstore_expired_policies` gauge.
    func warnAboutExpiredPolicies() {
        guard !staticPins.policies.isEmpty else { return }
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let expired = staticPins.expiredPolicies(at: now)
        metrics.expiredPolicies.record(expired.count)
        for policy in expired {
            logger.warning("A static pin policy has expired and no longer enforces its pins; renew or remove it", metadata: [
                "pinstore.policy.domain": "\(policy.domain)",
                "pinstore.policy.expiration": "\(policy.expiration.map { "\($0)" } ?? "-")",
            ])
        }
    }
}

extension PinStore {
    /// The fingerprint form with policies: deny pins make it `.untrusted` (no key to check);
    /// otherwise the list and the policies' certificate pins at depth 0.
    func validateWithPolicies(commonName: String, fingerprint: Data) -> ValidationResult {
        guard staticPins.denied.isEmpty, let host = HostName.lookupKey(commonName) else { return .untrusted }
        if let expectedNames, !expectedNames.contains(host) { return .untrusted }
        let list = validateListFingerprint(commonName: host, fingerprint: fingerprint)
        if list == .trusted { return .trusted }
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let digest = Digest32(fingerprint)
        var applies = false
        for policy in staticPins.policies where now < policy.expires && policy.pattern.matches(host) {
            applies = true
            // A policy that also requires a CA match cannot be proved by a lone fingerprint.
            guard let digest, !policy.needsChainForEveryMatch else { continue }
            for identity in policy.identities where identity.identity.kind == .certificate(depth: 0) || identity.identity.kind == .certificate(depth: nil) {
                if identity.digest.constantTimeEquals(digest) { return .trusted }
            }
        }
        return list == .untrusted || applies ? .untrusted : .empty
    }
}
