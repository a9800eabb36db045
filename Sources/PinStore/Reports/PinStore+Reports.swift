import Foundation

extension PinStore {
    /// Queues a report of `decision` when it is a pin failure and the configuration has a
    /// ``Configuration/reportURI``; otherwise does nothing. Called by ``record(_:host:port:servedChain:validatedChain:)``
    /// for every final decision; costs a pin lookup and a queue append, never a wait.
    ///
    /// Chain-trust failures are not reported: the normal trust evaluation refused them before any
    /// pin was looked at (an expired or misissued certificate is the server operator's alarm,
    /// not a pinning event), and their chain, unvalidated, could be anything a network attacker
    /// chose to make the app send to the collector.
    ///
    /// - Parameter enforced: false for a failure let through in report-only mode.
    func reportPinFailure(_ decision: PinningDecision, host: String, port: Int?, servedChain: [Data],
                          validatedChain: [Data]?, enforced: Bool, at date: Date) {
        guard let reporter, let failure = decision.failure ?? decision.reportedFailure, let reason = failure.reason.reportName else { return }
        let occurrence = PinFailureOccurrence(
            host: host, port: port, enforced: enforced, reason: reason,
            servedChain: servedChain, validatedChain: validatedChain ?? [],
            applied: appliedPins(host: host, at: date))
        reporter.submit(occurrence, at: date)
    }

    /// The pins that apply to `host` now, for a report: the downloaded and fallback list
    /// entries (exact name, then a `*.` entry), then the static policies. Deny pins are not
    /// listed: they are not pins of the host.
    func appliedPins(host: String, at date: Date) -> AppliedPins {
        guard let key = (try? HostName(host))?.text else {
            return AppliedPins(notedHostname: host, includeSubdomains: false, knownPins: [], expiration: nil)
        }
        let now = Int64(date.timeIntervalSince1970.rounded(.down))
        var noted: String?
        var includeSubdomains = false
        var known: [String] = []
        var latest: Int64?
        func add(_ pin: String, expires: Int64?) {
            if !known.contains(pin) { known.append(pin) }
            if let expires, expires != .max { latest = max(latest ?? expires, expires) }
        }
        let stored = state.withLock { $0.list.index }
        var tables: [(String, ArraySlice<PinIndex.Pin>)] = []
        for index in [stored, fallbackIndex].compactMap({ $0 }) {
            if let pins = index.exact[key] { tables.append((key, pins)) }
            if let dot = key.firstIndex(of: ".") {
                let parent = String(key[key.index(after: dot)...])
                if !parent.isEmpty, let pins = index.wildcard[parent] { tables.append(("*." + parent, pins)) }
            }
        }
        for (name, pins) in tables {
            for pin in pins where now < pin.expires {
                noted = noted ?? name
                let digest = pin.fingerprint.data.base64EncodedString()
                add(pin.isKeyPin ? "pin-sha256=\"\(digest)\"" : "cert-sha256=\"\(digest)\"", expires: pin.expires)
            }
        }
        if let policy = staticPins.selection(for: key, now: now)?.policy {
            if noted == nil {
                noted = policy.policy.domain
                includeSubdomains = policy.pattern.coversSubdomains
            }
            for identity in policy.policy.pins {
                let isCertificate = identity.kind.code == .certificate
                add(isCertificate ? "cert-sha256=\"\(identity.sha256Base64)\"" : "pin-sha256=\"\(identity.sha256Base64)\"",
                    expires: policy.expires)
            }
        }
        return AppliedPins(notedHostname: noted ?? host, includeSubdomains: includeSubdomains, knownPins: known,
                           expiration: latest.map { Date(timeIntervalSince1970: TimeInterval($0)) })
    }

    /// The reporter behind ``Configuration/reportURI`` (tests wait on it).
    package var pinFailureReporter: PinFailureReporter? { reporter }
}

extension PinningFailure.Reason {
    /// The `pinstore-reason` of a report of this failure; nil for failures that are not reported.
    var reportName: String? {
        switch backing {
        // Refused before any pin was looked at: not a pin failure (and the unvalidated chain is
        // whatever the server chose to send).
        case .chainNotTrusted, .transportSecurityNotMet: nil
        case .pinMismatch: "pin_mismatch"
        case .noPinsForHost: "no_pins_for_host"
        case .hostNotExpected: "host_not_expected"
        case .issuerPinsNeedChain: "issuer_pins_need_chain"
        case .deniedKey: "denied_key"
        case .certificateTransparencyNotMet: "certificate_transparency_not_met"
        case .revokedByList: "revoked_by_list"
        case .revocationsNeedChain: "revocations_need_chain"
        case .crlCheckFailed: "crl_check_failed"
        }
    }
}

extension PinStore.Configuration {
    /// Refuses a report URI that could not work or would send reports in clear text off the machine.
    func validateReportURI() throws(PinStoreError) {
        guard let reportURI else { return }
        guard reportURI.isAcceptableListURL(allowingLoopbackHTTP: true) else {
            throw PinStoreError(.invalidConfiguration, "reportURI \(reportURI.absoluteString) must be https (plain http is allowed only for a loopback host, for a local collector).")
        }
    }
}
