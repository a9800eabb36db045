import CoreMetrics
import Foundation
import Logging
import PinStore
import ServiceLifecycle

/// The publishing half of dynamic pinning: a long-lived service that probes every partner of
/// a ``PublicationFile``, remembers what each presented, decides by the publication rules what
/// may be pinned, and keeps a signed list (with its key documents and CT section) current in
/// the output folder, re-signing it before it expires.
///
/// Add it to a `ServiceGroup`; `run()` returns on graceful shutdown and on cancellation:
///
/// ```swift
/// let publisher = try Publisher(file: try PublicationFile(contentsOf: url), logger: logger)
/// let group = ServiceGroup(services: [publisher], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// Logs one info line per published list and per newly staged change; metrics are listed in
/// the operations guide (`pinstore_publisher_*`).
public actor Publisher: Service {
    package let setup: PublisherSetup
    let prober: any PartnerProber
    let clock: any PinStoreClock
    let logger: Logger
    let metrics: PublisherMetrics
    let stateFile: StateFile
    let output: OutputFolder
    /// The vantage points' shared objects (a folder unless a test gives another medium).
    let shared: SharedProposals
    let assembly: ListAssembly
    /// The state as saved last (every change is saved before it is acted on).
    package internal(set) var state: PublisherState
    package internal(set) var schedule: PublisherSchedule
    /// Staged change IDs already logged, so each is logged once.
    var loggedStaged = Set<String>()
    /// The proposal bodies (hex SHA-256) this publisher signed, by version: at most
    /// ``maximumCoSignedPerVersion`` per version, whatever others keep proposing.
    var coSignedBodies: [Int64: Set<String>] = [:]
    /// The loop's current sleep, cancelled by ``wake()`` when a probe is requested.
    var sleeper: Task<Void, any Error>?

    /// A publisher for `setup`, resuming from the state file in its state folder.
    ///
    /// - Throws: ``PublisherError/Code/stateFile`` when the state file is refused.
    package init(setup: PublisherSetup, prober: any PartnerProber, clock: any PinStoreClock = SystemClock(),
                 medium: (any PublicationMedium)? = nil,
                 logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil) throws(PublisherError) {
        self.setup = setup
        self.prober = prober
        self.clock = clock
        self.logger = logger ?? Logger(label: "pinstore.publisher", factory: { _ in SwiftLogNoOpLogHandler() })
        self.metrics = PublisherMetrics(factory: metricsFactory ?? MetricsSystem.factory)
        let file = setup.file
        self.stateFile = StateFile(url: file.resolve(file.stateFolder).appendingPathComponent("state.json"))
        self.output = OutputFolder(url: file.resolve(file.outputFolder), listFileName: file.listFileName)
        self.shared = SharedProposals(medium: medium ?? FolderMedium(url: file.proposalsFolderURL))
        guard let first = setup.signers.first else {
            throw PublisherError(.invalidPublicationFile, "The publisher has no signing key.")
        }
        self.assembly = ListAssembly(entrySigner: first)
        self.state = try stateFile.load()
        let now = clock.now()
        // A state file written before the bounds (or under other settings) is cut at once, so
        // `status`, `pending` and the first plan already read a bounded state.
        state.keepWithinBounds(now: now, minimumRemainingValidity: file.minimumRemainingValidity.seconds)
        // With several vantage points a cycle (reading the others' proposals) is cheap and is
        // what lets a peer's proposal be co-signed within seconds, not at the next probe round.
        self.schedule = PublisherSchedule(partners: file.partners.map(\.id), start: now, probeInterval: file.probeInterval.seconds,
                                          cycleInterval: setup.threshold >= 2 ? min(file.probeInterval.seconds, Self.peerCycleInterval) : file.probeInterval.seconds)
    }

    /// A publisher for the publication file, probing every partner over TLS at every address
    /// its name resolves to, and resuming from the state file in the file's state folder.
    ///
    /// - Throws: ``PublisherError`` when the file's keys, anchors or folders cannot be used, or
    ///   the state file is refused.
    public init(file: PublicationFile, logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil) throws(PublisherError) {
        try self.init(file: file, prober: TLSPartnerProber(), logger: logger, metricsFactory: metricsFactory)
    }

    /// A publisher for the publication file, probing through `prober`.
    package init(file: PublicationFile, prober: any PartnerProber, clock: any PinStoreClock = SystemClock(),
                 logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil) throws(PublisherError) {
        try self.init(setup: try PublisherSetup(file: file), prober: prober, clock: clock, logger: logger, metricsFactory: metricsFactory)
    }

    /// How often a vantage point among several looks at the others' proposals, at most.
    static let peerCycleInterval: TimeInterval = 30

    /// Probes, plans, publishes and re-signs until graceful shutdown or cancellation. When the
    /// publication file names a `reportEndpoint`, it listens there for the stores' pin-failure
    /// reports for as long as it runs.
    public func run() async throws {
        var endpoint: PublisherReportEndpoint?
        if let address = setup.file.reportEndpoint.flatMap(PublicationFile.endpointAddress) {
            endpoint = try await PublisherReportEndpoint.start(host: address.host, port: address.port, publisher: self, logger: logger)
            logger.info("listening for pin-failure reports", metadata: ["pinstore.endpoint": "\(address.host):\(address.port)"])
        }
        do {
            try await cancelWhenGracefulShutdown {
                try await self.loop()
            }
        } catch {
            try? await endpoint?.shutdown()
            throw error
        }
        try? await endpoint?.shutdown()
    }

    private func loop() async throws {
        while !Task.isCancelled {
            if case .sleep(let until) = await runDueWork() {
                let task = Task { [clock] in try await clock.sleep(until: until) }
                sleeper = task
                // Cancelled by wake() (a probe was requested) or by the run's own cancellation.
                _ = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
                sleeper = nil
            }
        }
    }

    /// Does everything due now (probes, then a cycle) and returns what comes next: the loop's
    /// body, which tests drive with an injected clock and no sleep.
    @discardableResult
    package func runDueWork() async -> PublisherSchedule.Action {
        for _ in 0..<16 {
            adoptOutsideChanges()
            let action = schedule.nextAction(at: clock.now())
            switch action {
            case .probe(let ids):
                await probe(ids)
            case .cycle:
                let succeeded = await cycle()
                schedule.cycled(at: clock.now(), succeeded: succeeded)
            case .sleep:
                return action
            }
        }
        return schedule.nextAction(at: clock.now())
    }

    /// Ends the loop's current sleep, so work made due by a request runs now.
    func wake() {
        sleeper?.cancel()
    }

    /// Makes `partnerIDs` due for a probe now, or when `minimumGap` since their last probe
    /// ends; wakes the loop whenever that moved its next work earlier (a deferred probe too: a
    /// lone publisher's loop otherwise sleeps on to its next `probeInterval`).
    @discardableResult
    func requestProbe(_ partnerIDs: [String], minimumGap: TimeInterval) -> [String] {
        let now = clock.now()
        let before = schedule.nextAction(at: now)
        let due = schedule.requestProbe(partnerIDs, at: now, minimumGap: minimumGap)
        if !due.isEmpty || schedule.nextAction(at: now) != before { wake() }
        return due
    }

    /// Probes the partners `ids` (all when nil) through the prober, records what they
    /// presented and saves the state.
    package func probe(_ ids: [String]? = nil) async {
        let partners = setup.partners.filter { ids?.contains($0.entry.id) ?? true }
        let section = setup.certificateTransparencySection
        for partner in partners {
            let results = await prober.probe(setup.target(for: partner.entry))
            let now = clock.now()
            metrics.partnersProbed.increment()
            if !results.contains(where: { if case .observed = $0 { true } else { false } }) {
                metrics.probeFailures.increment()
            }
            state.record(results, partnerID: partner.entry.id, at: now,
                         minimumRemainingValidity: setup.file.minimumRemainingValidity.seconds, ctVerdict: section.map { section in
                { chain in Self.ctVerdict(chain: chain, section: section, now: now) }
            })
        }
        let now = clock.now()
        state.forgetAddresses(olderThan: setup.file.gracePeriod.seconds, at: now)
        schedule.probed(partners.map(\.entry.id), at: now)
        save()
    }

    /// The CT verdict of a validated chain under the section, as a store in enforce mode decides.
    static func ctVerdict(chain: [Data], section: Data, now: Date) -> PublisherState.CTVerdict {
        do {
            let status = try CertificateTransparencyTools.status(chain: chain, section: section, now: now)
            return PublisherState.CTVerdict(compliant: status.compliant, detail: status.lines.last ?? "")
        } catch {
            return PublisherState.CTVerdict(compliant: false, detail: error.reason)
        }
    }

    /// Saves the state; a failure is logged (the next change tries again) and never loses the
    /// state in memory.
    func save() {
        adoptOutsideChanges()
        do {
            try stateFile.save(state)
        } catch {
            logger.warning("the publisher state could not be saved", metadata: ["pinstore.error": "\(error.reason)"])
        }
    }

    /// Takes the announcements and approvals another process added to the state file
    /// (`pinstore publish announce` / `approve` while `pinstore publish run` runs), so the running
    /// service acts on them and its own next save does not write them away. Everything else in
    /// the file is this service's own. A file that cannot be read changes nothing here (the
    /// save that follows reports it).
    ///
    /// An announcement is another process's only when this service does not have it, or has
    /// it with an earlier `announcedAt` (the key was announced again); an expired or ended one
    /// on disk is this service's own past (it ended or forgot it) and is not taken back.
    func adoptOutsideChanges() {
        guard let onDisk = try? stateFile.load() else { return }
        let now = clock.now()
        for announcement in onDisk.announcements where announcement.isLive(at: now) {
            if let index = state.announcements.firstIndex(where: {
                $0.partnerID == announcement.partnerID && $0.spkiSHA256 == announcement.spkiSHA256
            }) {
                if announcement.announcedAt > state.announcements[index].announcedAt { state.announcements[index] = announcement }
            } else {
                state.announcements.append(announcement)
            }
        }
        for approval in onDisk.approvals where !state.approvals.contains(where: {
            $0.changeID == approval.changeID && $0.keyID == approval.keyID
        }) {
            state.approvals.append(approval)
        }
    }

    /// The plan at `now` from the state in memory.
    package func plan(at now: Date) -> PublicationPlan {
        PublicationRules.plan(state: state, partners: setup.partners, settings: PublicationRules.Settings(setup.file, threshold: setup.threshold, signers: setup.signers.count),
                              approvals: verifiedApprovals(state.approvals), now: now)
    }

    /// Approvals whose signature verifies with an approver key: change ID to key ID.
    func verifiedApprovals(_ approvals: [PublisherState.Approval]) -> [String: String] {
        var verified: [String: String] = [:]
        for approval in approvals {
            guard let key = setup.approverKeys.first(where: { KeyDocumentTools.keyID(of: $0) == approval.keyID }),
                  let signature = Data(base64Encoded: approval.signature) else { continue }
            let message = PublicationRules.approvalMessage(changeID: approval.changeID, partnerID: approval.partnerID,
                                                           leafSHA256: approval.leafSHA256, kind: approval.kind, pin: approval.pin)
            if key.isValidSignature(signature, for: message) { verified[approval.changeID] = approval.keyID }
        }
        return verified
    }

    /// The state for `pinstore publish status`.
    public func status() -> PublisherStatus {
        let now = clock.now()
        let plan = plan(at: now)
        let rows = setup.partners.map { partner -> PublisherStatus.Partner in
            let id = partner.entry.id
            let record = state.partners[id]
            let pins = state.publishedPins.filter { $0.partnerID == id }
            let values = Set(pins.map(\.value))
            let certificates = record?.certificates.values.filter { $0.pin(partner.entry.pin).map { values.contains($0.value) } ?? false } ?? []
            return PublisherStatus.Partner(
                id: id, host: "\(partner.entry.host):\(partner.entry.port)", rotationCase: plan.cases[id]?.rawValue ?? RotationCase.unannouncedLeafRotation.rawValue,
                publishedPins: pins.count, pinnedCertificateExpires: certificates.map(\.notAfter).min(),
                lastProbe: record?.lastProbe, lastProbeFailure: record?.lastProbeFailure,
                pendingChanges: plan.staged.filter { $0.partnerID == id && !$0.pinAlreadyPublished }.count)
        }
        let file = setup.file
        let listExpires = state.lastPublished.map { Date(timeIntervalSince1970: TimeInterval($0.expires)) }
        // Re-signing is due resignInterval after publication, or once the list has
        // expires - resignInterval left, whichever comes first (what `listIsDue` acts on).
        let resignDue = state.lastPublished.flatMap { last in
            listExpires.map { min(last.publishedAt.addingTimeInterval(file.resignInterval.seconds),
                                  $0.addingTimeInterval(-(file.expires.seconds - file.resignInterval.seconds))) }
        }
        return PublisherStatus(listVersion: state.lastPublished?.version, listExpires: listExpires,
                               listPublishedAt: state.lastPublished?.publishedAt, partners: rows,
                               changesNeedingApproval: plan.staged.filter { $0.needsPerson && !$0.pinAlreadyPublished }.count,
                               listResignDue: resignDue,
                               resignSlack: PublisherStatus.resignSlack(probeInterval: file.probeInterval.seconds, expires: file.expires.seconds,
                                                                        resignInterval: file.resignInterval.seconds))
    }

    /// Whether the list in force carries the key pin `spkiSHA256` for `partnerID` (an
    /// announcement's pin is out, so the key may be deployed).
    package func listCarries(partnerID: String, spkiSHA256: String) -> Bool {
        guard let host = setup.partners.first(where: { $0.entry.id == partnerID })?.entry.host,
              let digest = Data(base64Encoded: spkiSHA256) else { return false }
        let prefix = FingerprintEntry(name: host, fingerprint: digest, expires: 0, depth: 0, kind: .publicKey).entryKey + " "
        return state.lastPublished?.entries.contains { $0.hasPrefix(prefix) } ?? false
    }

    /// Whether a published list still waits for a successful run of the `afterPublish`
    /// command (so it may not have reached where that command copies it).
    package var afterPublishIsOwed: Bool { state.afterPublishOwed != nil }

    /// Updates the gauges that depend on time.
    func updateGauges(plan: PublicationPlan, now: Date) {
        metrics.pendingChanges.record(plan.staged.filter { !$0.pinAlreadyPublished }.count)
        if let last = state.lastPublished {
            metrics.listExpiresIn.record(Double(last.expires) - now.timeIntervalSince1970)
        }
        for partner in setup.partners {
            let id = partner.entry.id
            let values = Set(state.publishedPins.filter { $0.partnerID == id }.map(\.value))
            let expiries = state.partners[id]?.certificates.values
                .filter { $0.pin(partner.entry.pin).map { values.contains($0.value) } ?? false }.map(\.notAfter) ?? []
            if let earliest = expiries.min() {
                metrics.pinnedCertificateExpiresIn(partner: id).record(earliest.timeIntervalSince(now))
            }
        }
    }
}
