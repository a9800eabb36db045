import Foundation

extension PinStore {
    /// The failure text of a refusal, modelled on OkHttp's: the validated chain and the pins
    /// that applied to `host`.
    func mismatchReport(host: String, chain: ValidatedChain) -> String {
        var lines = ["  Validated certificate chain (leaf first):"]
        lines += chain.summary.map { "    " + $0 }
        lines.append("  Pins that applied to \(host):")
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let stored = state.withLock { $0.list.index }
        var any = false
        for (index, source) in [(stored, "signed list"), (fallbackIndex, "fallback list")] {
            guard let index, let key = (try? HostName(host))?.text else { continue }
            index.forEachPin(matching: key) { pin in
                if now < pin.expires {
                    lines.append("    certificate \(pin.fingerprint.data.base64EncodedString()) at depth \(pin.depth) (\(source))")
                    any = true
                }
                return false
            }
        }
        if let policy = staticPins.selection(for: host, now: now)?.policy {
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
