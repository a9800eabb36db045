import Foundation
import Logging
import PinStore

extension Publisher {
    /// One publication cycle at the clock's time: take any newer list other vantage points
    /// finished; plan; then one round of the vantage-point protocol (`Publisher+VantagePoints.swift`):
    /// co-sign the proposals for the next version that this publisher would write itself,
    /// propose its own plan when none agrees and a list is due, finish a proposal once
    /// `threshold` keys signed it, and put the finished list in the output folder. Returns false when something failed (the last
    /// good list stays served, and the schedule retries sooner).
    @discardableResult
    package func cycle() async -> Bool {
        let now = clock.now()
        var succeeded = true
        do {
            try adoptFinishedLists(now: now)
        } catch {
            succeeded = false
            logger.warning("a finished list could not be published", metadata: ["pinstore.error": "\(error.reason)"])
        }
        let plan = plan(at: now)
        logNewlyStaged(plan)
        keepWithdrawalClocks(plan)
        save()
        do {
            try await vantagePointRound(plan: plan, now: now)
        } catch {
            succeeded = false
            logger.warning("the list could not be published; the last good list stays served",
                           metadata: ["pinstore.error": "\(error.reason)", "pinstore.code": "\(error.code)"])
        }
        save()
        if await !runAfterPublishCommandIfOwed() { succeeded = false }
        updateGauges(plan: plan, now: now)
        return succeeded
    }

    /// Runs the publication file's `afterPublish` command when a published list has not had a
    /// successful run yet (this round's, or an earlier one's that failed or was cut short by a
    /// stop): the output folder's absolute path is its last argument. False when it failed;
    /// it is run again next round, and the list stays published either way (the output folder
    /// is the publisher's; what the command copies it to is the operator's).
    func runAfterPublishCommandIfOwed() async -> Bool {
        guard let version = state.afterPublishOwed else { return true }
        guard let command = setup.file.afterPublish else {
            state.afterPublishOwed = nil
            save()
            return true
        }
        let timeout = setup.file.afterPublishTimeout.seconds
        let program = command[0]
        let failure: String
        do {
            let ended = try await CommandRunner.run(command + [output.url.standardizedFileURL.path], input: nil, timeout: timeout, maximumOutput: 4_096)
            if ended.exitStatus == 0 {
                state.afterPublishOwed = nil
                save()
                logger.info("the after-publish command ran", metadata: ["pinstore.version": "\(version)", "pinstore.command": "\(program)"])
                return true
            }
            failure = "it \(ended.describedEnd)"
        } catch {
            switch error {
            case .notStarted(let reason): failure = "it could not be started: \(reason)"
            case .timedOut: failure = "it did not finish within \(Int(timeout)) seconds (afterPublishTimeout) and was killed"
            case .outputHeldOpen: failure = "what it started kept its output open past \(Int(timeout)) seconds and was killed (a background child must not keep the command's output open)"
            case .cancelled: failure = "the publisher is stopping; it was killed and runs again at the next start"
            }
        }
        metrics.afterPublishFailures.increment()
        logger.error("the after-publish command failed; it runs again next round (the list is published in the output folder, but may not have reached where the command copies it)",
                     metadata: ["pinstore.version": "\(version)", "pinstore.command": "\(program)", "pinstore.error": "\(failure)"])
        return false
    }

    /// Whether the list in force must be replaced at `now`: its pins differ from the plan's,
    /// or re-signing is due (the TUF timestamp pattern: a fresh `expires` before the old one).
    func listIsDue(_ plan: PublicationPlan, now: Date) -> Bool {
        guard !plan.pins.isEmpty else { return false }
        guard let last = state.lastPublished else { return true }
        if last.entries != plan.listKeys { return true }
        // A revocation added to (or removed from) the publication file goes out now, not at
        // the next re-signing.
        if !Self.sameRevocations(last.revocations ?? [], setup.revocations) { return true }
        if !Self.sameCRL(last.crl, setup.crl) { return true }
        return now.timeIntervalSince(last.publishedAt) >= setup.file.resignInterval.seconds
            || Double(last.expires) - now.timeIntervalSince1970 <= setup.file.expires.seconds - setup.file.resignInterval.seconds
    }

    /// The `revocations` section of a list body, as written (empty when it has none); nil when
    /// the member is there but is not a revocations array.
    static func revocations(in body: Data) -> [ListRevocations.Wire]? {
        struct Member: Decodable { let revocations: [ListRevocations.Wire]? }
        guard let member = try? JSONDecoder().decode(Member.self, from: body) else { return nil }
        return member.revocations ?? []
    }

    /// The `crl` section of a list body, as written (`.some(nil)` when it has none); nil when
    /// the member is there but is not a crl section.
    static func crl(in body: Data) -> CRLHostList.Wire?? {
        struct Member: Decodable { let crl: CRLHostList.Wire? }
        guard let member = try? JSONDecoder().decode(Member.self, from: body) else { return nil }
        return .some(member.crl)
    }

    /// Whether two crl sections give the same hosts the same modes, in whatever order written.
    static func sameCRL(_ a: CRLHostList.Wire?, _ b: CRLHostList.Wire?) -> Bool {
        a.map { Set($0.hosts) } == b.map { Set($0.hosts) }
    }

    /// Whether two sections revoke the same entries, in whatever order they were written.
    static func sameRevocations(_ a: [ListRevocations.Wire], _ b: [ListRevocations.Wire]) -> Bool {
        a.count == b.count && Set(a) == Set(b)
    }

    /// Throws unless a store trusting the configured keys would install `list` after the list in force.
    @discardableResult
    func checkPublishable(_ list: Data, now: Date) throws(PublisherError) -> (version: Int64, expires: Int64?, timestamp: Int64, entries: [FingerprintEntry]) {
        do {
            return try ListAcceptance.checkPublishable(list, keys: setup.trustedKeys, threshold: setup.threshold,
                                                       previousVersion: state.lastPublished?.version,
                                                       previousTimestamp: state.lastPublished?.timestamp, at: now)
        } catch {
            throw PublisherError(.refusedByRuntime, "The runtime would refuse the list, so it is not published: \(error.reason)")
        }
    }

    /// Checks `list`'s exact bytes as a store would, writes it (and its companions) into the
    /// output folder, and makes it the list in force.
    func publish(_ list: Data, now: Date) throws(PublisherError) {
        let checked = try checkPublishable(list, now: now)
        try output.publish(list: list, keyDocuments: setup.keyDocuments, certificateTransparency: setup.certificateTransparencySection)
        if setup.file.afterPublish != nil { state.afterPublishOwed = checked.version }
        let previous = Set(state.lastPublished?.entries ?? [])
        let keys = checked.entries.map(\.listKey)
        let plan = plan(at: now)
        let planned = Dictionary(plan.pins.map { ($0.entryKey, $0) }, uniquingKeysWith: { first, _ in first })
        var pins: [PublisherState.PublishedPin] = []
        for entry in checked.entries {
            if var pin = planned[entry.entryKey] {
                pin.expires = entry.expires
                pins.append(pin)
            } else if var kept = state.publishedPins.first(where: { $0.entryKey == entry.entryKey }) {
                // A pin this publisher's plan had just withdrawn, kept by the list the others
                // finished: its withdrawal clock goes on, it does not start again.
                kept.expires = entry.expires
                pins.append(kept)
            } else if let partner = setup.partners.first(where: { $0.entry.host.lowercased() == entry.name.lowercased() }) {
                pins.append(PublisherState.PublishedPin(partnerID: partner.entry.id, name: entry.name, kind: PublicationFile.PinKind(entry.kind),
                                                        value: entry.fingerprint.base64EncodedString(), expires: entry.expires,
                                                        source: "observed", notServedSince: nil))
            }
        }
        var adopted = plan
        adopted.pins = pins
        state.adopt(adopted)
        state.lastPublished = PublisherState.PublishedListRecord(
            version: checked.version, timestamp: checked.timestamp, expires: checked.expires ?? checked.timestamp,
            sha256: SHA256Digest.hash(list).base64EncodedString(), publishedAt: now, entries: keys,
            revocations: Self.revocations(in: list), crl: Self.crl(in: list) ?? nil)
        save()
        let added = keys.filter { !previous.contains($0) }.count
        let removed = previous.subtracting(keys).count
        metrics.publishedChanges.increment(by: Int64(added + removed))
        logger.info("published the pin list", metadata: [
            "pinstore.version": "\(checked.version)", "pinstore.entries": "\(keys.count)",
            "pinstore.added": "\(added)", "pinstore.removed": "\(removed)",
            "pinstore.expires": "\(checked.expires ?? 0)",
        ])
    }

    /// Keeps the withdrawal clocks the plan started in the state (so they survive restarts and
    /// the grace period is counted from the first probe that missed the pin).
    private func keepWithdrawalClocks(_ plan: PublicationPlan) {
        let clocks = Dictionary(plan.pins.map { ($0.entryKey, $0.notServedSince) }, uniquingKeysWith: { first, _ in first })
        for index in state.publishedPins.indices {
            if let started = clocks[state.publishedPins[index].entryKey] {
                state.publishedPins[index].notServedSince = started
            } else if state.publishedPins[index].notServedSince == nil {
                state.publishedPins[index].notServedSince = clock.now()
            }
        }
    }

    /// One info line per staged change, the first time it is staged.
    private func logNewlyStaged(_ plan: PublicationPlan) {
        for change in plan.staged where !change.outcome.isWaiting && loggedStaged.insert(change.id).inserted {
            logger.info("a certificate is staged for a person", metadata: [
                "pinstore.change": "\(change.id)", "pinstore.partner": "\(change.partnerID)",
                "pinstore.reason": "\(change.outcome.code)", "pinstore.detail": "\(change.outcome)",
            ])
        }
    }
}
