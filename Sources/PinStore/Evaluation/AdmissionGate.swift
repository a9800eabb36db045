import Foundation

/// Whether a kept connection may carry one more request: the one contract every adapter that
/// reuses connections keeps (the pinned URLSession's pool, AsyncHTTPClient), written once.
///
/// A connection is admitted by the pin check under one list generation
/// (``PinStore/listGeneration``). Until the generation moves, nothing it was judged on changed,
/// and a write goes out with one compare. Once it moved, the connection is judged again over
/// the evidence it was admitted with, and the new answer counts only if no list landed while
/// it was made (the generation before and after the check agree); a connection the new list no
/// longer pins is refused for good. A connection serves the host it was admitted for and no
/// other.
///
/// A plain value with no store, lock or channel: the adapters keep it beside their connection
/// and drive it with ``PinStore/admit(_:host:)``, and the tests drive it with numbers.
package struct AdmissionGate: Sendable {
    /// What a connection was admitted with: what a re-check judges again.
    package enum Evidence: Sendable {
        /// The chain the trust evaluation validated, for the host the connection was made for
        /// (the pinned URLSession's pool, the NIO verifier).
        case chain(ValidatedChain, host: HostName)
        /// The leaf alone, for every host its names cover, and the address it came from
        /// (AsyncHTTPClient: its connection hook shows neither the chain nor the host).
        case leaf(Data, peerAddress: String?)
    }

    /// What to do with a write.
    package enum Verdict: Sendable, Equatable {
        /// Write: the connection is pinned under the list in force.
        case admit
        /// The list changed since the connection was last judged: judge it again first.
        case recheck
        /// Never write on this connection again.
        case refuse
    }

    /// What the connection was admitted with.
    package let evidence: Evidence
    /// The generation under which the connection was last found pinned; nil once refused.
    package private(set) var pinnedUnder: UInt64?

    /// A connection the pin check admitted under `generation` (read before the check began).
    package init(evidence: Evidence, admittedUnder generation: UInt64) {
        self.evidence = evidence
        self.pinnedUnder = generation
    }

    /// The host the connection was admitted for; nil for a leaf-only admission, which holds
    /// for every name the leaf covers.
    package var host: HostName? {
        if case .chain(_, let host) = evidence { return host }
        return nil
    }

    /// The verdict on a write for `host` (nil: the adapter cannot see it) while the store is
    /// at `generation`.
    package func verdict(at generation: UInt64, for host: HostName? = nil) -> Verdict {
        guard let pinnedUnder else { return .refuse }
        if let host, let admitted = self.host, host != admitted { return .refuse }
        return generation == pinnedUnder ? .admit : .recheck
    }

    /// Takes the outcome of a re-check that read the generation `before` as it began and
    /// `after` as it ended. Pinned under one generation: admitted under it. Pinned, but a list
    /// landed meanwhile: check again. Not pinned: refused for good.
    package mutating func recheckFinished(pinned: Bool, before: UInt64, after: UInt64) -> Verdict {
        guard pinnedUnder != nil else { return .refuse }
        guard pinned else {
            pinnedUnder = nil
            return .refuse
        }
        guard before == after else { return .recheck }
        pinnedUnder = after
        return .admit
    }

    /// Refuses every later write (the connection is retired, or the list would not hold still).
    package mutating func refuse() {
        pinnedUnder = nil
    }
}

extension PinStore {
    /// Re-checks before giving up: lists installed faster than one pin check, again and again,
    /// are not a schedule to wait out.
    static let maximumAdmissionRechecks = 8

    /// Runs `gate` for a write for `host` under the list in force: the re-checks it asks for
    /// (each the pin decision again over the gate's evidence, not reported), at most
    /// ``maximumAdmissionRechecks`` of them. Returns the final verdict (`.admit` or `.refuse`)
    /// and the generation it was reached under.
    package func admit(_ gate: inout AdmissionGate, host: HostName? = nil) -> (verdict: AdmissionGate.Verdict, generation: UInt64) {
        var generation = listGeneration
        var verdict = gate.verdict(at: generation, for: host)
        var rechecks = 0
        while verdict == .recheck {
            guard rechecks < Self.maximumAdmissionRechecks else {
                gate.refuse()
                return (.refuse, generation)
            }
            rechecks += 1
            let pinned = stillAdmits(gate.evidence)
            let after = listGeneration
            verdict = gate.recheckFinished(pinned: pinned, before: generation, after: after)
            generation = after
        }
        return (verdict, generation)
    }

    /// Whether a connection admitted with `evidence` may still carry requests under the list in
    /// force: the pin decision again (not reported), so a connection admitted in report-only
    /// mode or by ``DomainsConfig`` is kept exactly as long as a new connection would be admitted.
    package func stillAdmits(_ evidence: AdmissionGate.Evidence) -> Bool {
        refusal(of: evidence) == nil
    }

    /// Why the list in force would refuse a new connection with `evidence` (nil: it would admit
    /// it): the reason an adapter gives for a write its gate refused. Not reported.
    package func refusal(of evidence: AdmissionGate.Evidence) -> PinningFailure? {
        switch evidence {
        case .chain(let chain, let host):
            pinDecision(host: host, requestedName: host.text, evidence: .validated(chain)).failure
        case .leaf(let leaf, let peerAddress):
            leafDecision(leaf: leaf, peerAddress: peerAddress).failure
        }
    }
}
