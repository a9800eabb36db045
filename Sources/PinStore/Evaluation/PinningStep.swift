import Foundation

/// What an adapter does next with a connection. The one "decide, maybe update, decide again,
/// report" of every adapter (the NIO callback, the pooled URLSession, AsyncHTTPClient, the
/// Apple delegate and ``PinningEvaluator``), written once.
package enum PinningStep: Sendable {
    /// The final decision, already reported.
    case decided(PinningDecision)
    /// The first decision was a refusal that a newer list could turn around: the adapter runs
    /// ``PendingPinningDecision/decideAfterUpdate()`` (off its event loop) for the final one.
    case updateFirst(PendingPinningDecision)

    /// The final decision, updating first when needed.
    package func decision() async -> PinningDecision {
        switch self {
        case .decided(let decision): decision
        case .updateFirst(let pending): await pending.decideAfterUpdate()
        }
    }
}

/// A decision waiting for one rate-limited list update.
package struct PendingPinningDecision: Sendable {
    let store: PinStore
    let decide: @Sendable () -> PinningDecision
    let report: @Sendable (PinningDecision) -> Void
    /// Work the decision waits for first (the CRLs the chain needs, bounded by the budget),
    /// then whether its decision still wants the update; nil: the update path only.
    var prepare: (@Sendable () async -> Void)? = nil
    var wantsUpdate: (@Sendable (PinningDecision) -> Bool)? = nil

    /// ``PinStore/updateAfterRefusal(decidedUnder:)`` (at most one download a minute on behalf
    /// of refusals; one under way is shared), then the decision again; reported. With
    /// ``prepare``, that first, and the update only when the decision after it wants one.
    package func decideAfterUpdate() async -> PinningDecision {
        if let prepare {
            await prepare()
            let decision = decide()
            guard wantsUpdate?(decision) ?? false else {
                report(decision)
                return decision
            }
        }
        // A download that ended since the first decision (the scheduled one a request started,
        // say) may have brought the pins already: look again first, and download only if the
        // list is still the one this look saw.
        let generation = store.listGeneration
        let recheck = decide()
        if case .allow = recheck {
            report(recheck)
            return recheck
        }
        let updateResult = await store.updateAfterRefusal(decidedUnder: generation)
        let final = Self.naming(updateResult, in: decide())
        report(final)
        return final
    }

    /// The decision now, without waiting for the update or the preparation (an adapter that
    /// cannot wait); reported.
    package func decideWithoutWaiting() -> PinningDecision {
        let decision = decide()
        report(decision)
        return decision
    }

    /// A host still without pins says which update was tried.
    private static func naming(_ updateResult: PinStore.UpdateResult?, in decision: PinningDecision) -> PinningDecision {
        switch decision {
        case .deny(let failure) where failure.reason.isNoPinsForHost:
            .deny(PinningFailure(host: failure.host, reason: .noPinsForHost(updateResult: updateResult), details: failure.details))
        case .reportOnly(let failure, let chain) where failure.reason.isNoPinsForHost:
            .reportOnly(PinningFailure(host: failure.host, reason: .noPinsForHost(updateResult: updateResult), details: failure.details),
                        validatedChain: chain)
        default:
            decision
        }
    }
}

extension PinStore {
    /// The first decision, and either its report or the update that may turn it around.
    ///
    /// - Parameters:
    ///   - updateOnEmpty: Whether a host without pins waits for one update first.
    ///   - updateOnMismatch: Whether a pin mismatch waits for one update first.
    ///   - report: Records a final decision (metrics, decision stream, pin-failure report).
    ///   - decide: The decision with the pins in force when it runs (not reported).
    ///   - prepare: What the decision waits for first (the CRLs a chain needs); nil for none.
    func step(updateOnEmpty: Bool, updateOnMismatch: Bool, prepare: (@Sendable () async -> Void)? = nil,
              report: @escaping @Sendable (PinningDecision) -> Void,
              decide: @escaping @Sendable () -> PinningDecision) -> PinningStep {
        if let prepare {
            return .updateFirst(PendingPinningDecision(store: self, decide: decide, report: report, prepare: prepare, wantsUpdate: {
                Self.wantsUpdate(after: $0, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch)
            }))
        }
        let first = decide()
        guard Self.wantsUpdate(after: first, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch) else {
            report(first)
            return .decided(first)
        }
        return .updateFirst(PendingPinningDecision(store: self, decide: decide, report: report))
    }

    /// The refresh rule every adapter follows: a host without pins, or a valid chain that
    /// matches none, may mean the list changed since it was loaded. Report-only failures too:
    /// the update still happens before the final decision. Never for the other failures: an
    /// update cannot make an untrusted chain, an unexpected host or a denied key acceptable.
    static func wantsUpdate(after decision: PinningDecision, updateOnEmpty: Bool, updateOnMismatch: Bool) -> Bool {
        guard let failure = decision.failure ?? decision.reportedFailure else { return false }
        switch failure.reason.backing {
        case .noPinsForHost: return updateOnEmpty
        case .pinMismatch: return updateOnMismatch
        // An SCT from a log the list does not know: a newer list may name it.
        case .certificateTransparencyNotMet(let violation): return updateOnMismatch && violation.sctsFromUnknownLogs > 0
        // A revocation is the team's signed word: no update is fetched to argue with it; and a
        // newer list cannot un-revoke a certificate a CA revoked, nor fetch a CRL.
        case .chainNotTrusted, .hostNotExpected, .issuerPinsNeedChain, .deniedKey, .transportSecurityNotMet,
             .revokedByList, .revocationsNeedChain, .crlCheckFailed: return false
        }
    }

    /// The pin decision for `host` over `evidence` with the pins in force now (not reported);
    /// starts the scheduled background update when one is due, as `matchPins` does.
    ///
    /// - Parameters:
    ///   - requestedName: The host as the caller wrote it, for failures and reports.
    ///   - evidence: Consumed: moved into the decision's context, not copied (a copy of a
    ///     leaf's evidence cost about 200 instructions, on every `matchPins`).
    func pinDecision(host: HostName, requestedName: String, evidence: consuming ChainEvidence, relaxing: Bool = true) -> PinningDecision {
        let (listInForce, now) = pinSnapshot()
        let connection = PinningContext(host: host, requestedName: requestedName, evidence: evidence,
                                        tables: PinningTables(listInForce: listInForce, fallback: fallbackIndex), now: now)
        let decision = rules.decide(connection, relaxing: relaxing)
        return relaxing ? withOperatorDetails(decision, host: host, evidence: connection.evidence) : decision
    }

    /// A pin mismatch or denied key over a validated chain carries, for the operator, the chain
    /// and the pins that applied (failure text only, never on success).
    private func withOperatorDetails(_ decision: PinningDecision, host: HostName, evidence: ChainEvidence) -> PinningDecision {
        guard case .validated(let chain) = evidence, let failure = decision.failure ?? decision.reportedFailure else { return decision }
        switch failure.reason {
        case .pinMismatch, .deniedKey, .revokedByList: break
        default: return decision
        }
        let detailed = PinningFailure(host: failure.host, reason: failure.reason, details: mismatchReport(host: host.text, chain: chain))
        if case .reportOnly(_, let certificates) = decision { return .reportOnly(detailed, validatedChain: certificates) }
        return .deny(detailed)
    }

    /// The pin decision (not reported) for `host` over a chain the caller vouches was validated
    /// by the normal trust evaluation: for tests. The adapters keep the ``ValidatedChain`` their
    /// evaluation made and re-check it through ``AdmissionGate`` (``stillAdmits(_:)``).
    package func pinDecision(host: String, validatedChain: [Data]) -> PinningDecision {
        guard let name = try? HostName(host) else {
            return .deny(PinningFailure(host: host, reason: .chainNotTrusted(
                ChainValidationError(.hostnameMismatch, depth: 0, detail: HostName.problem(host)))))
        }
        guard let chain = ValidatedChain(alreadyValidatedByCaller: validatedChain) else {
            // Never skip the rules for a chain we cannot read: refuse.
            return .deny(PinningFailure(host: host, reason: .chainNotTrusted(ChainValidationError(
                .malformedCertificate, depth: 0, detail: "The verified chain could not be read back for the pin rules."))))
        }
        return pinDecision(host: name, requestedName: host, evidence: .validated(chain))
    }
}
