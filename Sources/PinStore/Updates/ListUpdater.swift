import Foundation
import Logging

/// The life of the signed list: the one download under way, the schedule, the refusal budget,
/// verification, the rules a list must pass to replace the one in force, and the store and
/// key-document files.
///
/// Why it is a type of its own: ``PinStore`` answers pin decisions from any thread, many times
/// a second, and needs only the list in force; everything that changes that list is slow,
/// stateful and time-driven. Kept apart, the read path stays one lock read
/// (``PinStore/pinSnapshot()``, ``PinStore/listGeneration``) and the update path can be driven
/// alone in tests with a ``FingerprintListFetcher`` and a ``PinStoreClock``.
///
/// The updater owns its own state (``State``) and writes the store's read state
/// (``PinStore/State``) only through ``PinStore/State/replaceList(_:expires:)`` and the published
/// due date. Lock order: the updater's lock, then the read state's; the read path never takes
/// the updater's lock while it holds its own.
final class ListUpdater: Sendable {
    /// What the store does when the list in force changes or time passes: set once by the store
    /// right after its own `init` (``connect(_:)``), so the updater does not keep it alive.
    struct Hooks: Sendable {
        /// The list in force changed at this time (installed, adopted or dropped): refresh what
        /// derives from it (gauges, pooled trust).
        var listChanged: @Sendable (Date) -> Void = { _ in }
        /// Time passed (the schedule loop's wake-ups, the start of an update): refresh the
        /// gauges and report a list that has expired.
        var refreshGauges: @Sendable (Date) -> Void = { _ in }
    }

    struct State {
        /// When the next silent (scheduled) update is due, with backoff after failures.
        var schedule: RefreshSchedule
        /// The download under way, shared by every caller that needs one.
        var inFlight: Task<PinStore.UpdateReport, Never>?
        /// Downloads started on behalf of refusals (``updateAfterRefusal(decidedUnder:)``).
        var refusalBudget: RefusalBudget
        /// The list-signing keys in force and the key documents that led to them.
        var keys: TrustedKeys
    }

    let configuration: PinStore.Configuration
    let logger: Logger
    let clock: any PinStoreClock
    let fetcher: any FingerprintListFetcher
    let metrics: PinStoreMetrics
    /// The key set the configuration ships (``PinStore/Configuration/publicKey``,
    /// ``PinStore/Configuration/additionalPublicKeys``): where every key document chain starts.
    let configuredKeys: ListKeySet
    let file: PersistentListFile
    /// Where the key documents accepted so far are kept (``PinStore/Configuration/keyDocumentFileURL``).
    let keyFile: PersistentListFile
    /// The store's read state: where a verified list goes in force.
    let inForce: Locked<PinStore.State>
    let state: Locked<State>
    let hooks = Locked(Hooks())

    /// An updater for `configuration` (validated: `configuredKeys` is its key set) that puts the
    /// lists it accepts in force in `inForce`. Reads nothing yet: see ``loadSaved()``.
    init(configuration: PinStore.Configuration, configuredKeys: ListKeySet, fetcher: any FingerprintListFetcher,
         clock: any PinStoreClock, logger: Logger, metrics: PinStoreMetrics, inForce: Locked<PinStore.State>) {
        self.configuration = configuration
        self.configuredKeys = configuredKeys
        self.fetcher = fetcher
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        self.inForce = inForce
        // A store file is at most a list body in Base64 plus a little (saturating: `.max` means
        // "no limit" to a caller and must not trap).
        let fileLimit = configuration.maximumListSize > (Int.max - 64 * 1024) / 2 ? Int.max : configuration.maximumListSize * 2 + 64 * 1024
        self.file = PersistentListFile(url: configuration.storeFileURL, maximumSize: fileLimit)
        self.keyFile = PersistentListFile(url: configuration.keyDocumentFileURL, maximumSize: KeyChain.maximumStoredSize)
        let schedule = RefreshSchedule(listDue: .distantPast, periodicInterval: configuration.periodicUpdateInterval)
        self.state = Locked(State(schedule: schedule, inFlight: nil,
                                  refusalBudget: RefusalBudget(interval: configuration.refusalUpdateInterval),
                                  keys: TrustedKeys(configured: configuredKeys)))
        inForce.withLock { $0.updateDue = schedule.dueDate }
    }

    /// Sets what the store does when the list in force changes (once, before ``loadSaved()``).
    func connect(_ hooks: Hooks) {
        self.hooks.withLock { $0 = hooks }
    }

    /// Loads (and verifies again) what an earlier run saved: the key documents first, since the
    /// stored list is verified with the keys in force.
    func loadSaved() {
        loadKeyDocuments()
        loadPersistedList()
    }

    /// When the next silent update is due.
    var nextUpdateDate: Date {
        state.withLock { $0.schedule.dueDate }
    }

    /// Changes the updater's state (its schedule) and publishes the due date to the read state
    /// in the same critical section, so a decision reads the list and the due date with one lock.
    private func changingSchedule(_ body: (inout State) -> Void) {
        state.withLock { state in
            body(&state)
            let due = state.schedule.dueDate
            inForce.withLock { $0.updateDue = due }
        }
    }

    // MARK: - Updates

    /// Brings the list up to date as `mode` says (``PinStore/updateWithReport(mode:)``).
    func update(mode: PinStore.UpdateMode) async -> PinStore.UpdateReport {
        let now = clock.now()
        let hasValidStored = inForce.withLock { state in
            state.stored.map { now.timeIntervalSince1970 < Double($0.index.latestExpires) } ?? false
        }
        if mode == .forced || !hasValidStored {
            return await startDownloadIfNeeded().value
        }
        if state.withLock({ $0.schedule.isDue(at: now) }) {
            // Silent update: the caller goes on with the pins it has.
            _ = startDownloadIfNeeded()
            return PinStore.UpdateReport(result: .ok, error: nil, activity: .startedInBackground)
        }
        return PinStore.UpdateReport(result: .ok, error: nil, activity: .notDue)
    }

    /// Starts the shared background download when the schedule says one is due and none is
    /// under way.
    func startScheduledUpdateIfDue(at now: Date) {
        state.withLock { state in
            guard state.inFlight == nil, state.schedule.isDue(at: now) else { return }
            state.inFlight = makeDownloadTask(adoptingNewerFile: true)
        }
    }

    /// The scheduled update ``runSchedule()`` waits for: joins one under way, else starts one
    /// that first looks for a newer list another process saved.
    /// Returns nil when the calling task is cancelled first: the download goes on for whoever
    /// else waits for it, but the loop does not wait for a slow list server to stop.
    func scheduledUpdate() async -> PinStore.UpdateReport? {
        let download = state.withLock { state in
            if let running = state.inFlight { return running }
            let task = makeDownloadTask(adoptingNewerFile: true)
            state.inFlight = task
            return task
        }
        return await Self.valueUnlessCancelled(download)
    }

    /// `task.value`, or nil as soon as the calling task is cancelled (an unstructured task's
    /// `value` ignores the waiter's cancellation).
    static func valueUnlessCancelled(_ task: Task<PinStore.UpdateReport, Never>) async -> PinStore.UpdateReport? {
        let waiter = Locked<CheckedContinuation<PinStore.UpdateReport?, Never>?>(nil)
        @Sendable func resume(_ value: PinStore.UpdateReport?) {
            waiter.withLock { continuation in
                continuation?.resume(returning: value)
                continuation = nil
            }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PinStore.UpdateReport?, Never>) in
                waiter.withLock { $0 = continuation }
                if Task.isCancelled { resume(nil); return }
                Task { resume(await task.value) }
            }
        } onCancel: {
            resume(nil)
        }
    }

    /// The update adapters run after a refusal (``PinStore/updateAfterRefusal(decidedUnder:)``):
    /// a forced download, shared with one under way, at most one per
    /// ``PinStore/Configuration/refusalUpdateInterval`` on behalf of refusals. Returns nil when
    /// the budget held the download back.
    ///
    /// - Parameter generation: The ``PinStore/listGeneration`` the refusal was decided under.
    ///   When the list has changed since, nothing is downloaded and the result is `.ok`.
    func updateAfterRefusal(decidedUnder generation: UInt64?) async -> PinStore.UpdateResult? {
        let now = clock.now()
        // Join or start in one critical section: a download that ends between a check and a
        // start must not let refusals chain downloads back to back.
        var listChanged = false
        let download = state.withLock { state -> Task<PinStore.UpdateReport, Never>? in
            // Joining a download under way (scheduled, explicit or another refusal's) is free
            // and does not spend the budget.
            if let running = state.inFlight { return running }
            if let generation, generation != inForce.withLock({ $0.generation }) {
                listChanged = true
                return nil
            }
            guard state.refusalBudget.spend(at: now) else { return nil }
            let task = makeDownloadTask()
            state.inFlight = task
            return task
        }
        if listChanged { return .ok }
        guard let download else { return nil }
        return await download.value.result
    }

    /// The shortest time from one applied list to the next scheduled download (seconds), unless
    /// the periodic interval is shorter (drills).
    static let minimumUpdateInterval: TimeInterval = 60

    private func startDownloadIfNeeded() -> Task<PinStore.UpdateReport, Never> {
        state.withLock { state in
            if let running = state.inFlight { return running }
            let task = makeDownloadTask()
            state.inFlight = task
            return task
        }
    }

    /// The one download task; call with the state lock held and store it in `inFlight`.
    ///
    /// - Parameter adoptingNewerFile: For scheduled updates: when another process sharing the
    ///   storage directory saved a newer verified list that is not due yet, take it instead of
    ///   downloading.
    private func makeDownloadTask(adoptingNewerFile: Bool = false) -> Task<PinStore.UpdateReport, Never> {
        Task { [self] in
            if adoptingNewerFile, self.adoptNewerStoredList() {
                self.state.withLock { $0.inFlight = nil }
                self.metrics.record(.ok)
                return PinStore.UpdateReport(result: .ok, error: nil, activity: .adoptedFromStoreFile)
            }
            let report = await self.downloadAndApply()
            if report.result == .ok {
                FreedMemory.returnAfterLargeList(pinCount: self.inForce.withLock { $0.stored?.index.pinCount ?? 0 })
            }
            let now = self.clock.now()
            self.changingSchedule { state in
                state.inFlight = nil
                if report.result != .ok { state.schedule.downloadFailed(at: now) }
            }
            self.metrics.record(report.result)
            return report
        }
    }

    private func downloadAndApply() async -> PinStore.UpdateReport {
        // One time for the whole update: key document expiry, list expiry and the schedule.
        let now = clock.now()
        // A list in force past its `expires` is reported before the update that replaces it.
        hooks.withLock { $0 }.refreshGauges(now)
        do {
            let keys = try await refreshKeys(at: now)
            let verified = try await download(keys: keys)
            let saveError = try apply(verified, now: now)
            logger.info("fingerprint list updated", metadata: ["entries": "\(verified.entries.count)", "identifier": "\(configuration.identifier)"])
            return PinStore.UpdateReport(result: .ok, error: nil, saveError: saveError)
        } catch {
            logger.warning("fingerprint list update failed", metadata: ["reason": "\(error)", "identifier": "\(configuration.identifier)"])
            return PinStore.UpdateReport(result: error.updateResult, error: error)
        }
    }

    private func download(keys: ListKeySet) async throws(PinStoreError) -> PinStore.VerifiedList {
        var headers: [String: String] = [:]
        var challenge: String?
        if configuration.useChallenge {
            let fresh = try RandomBytes.generate(16).base64EncodedString()
            challenge = fresh
            headers[PinStore.challengeHeader] = fresh
        }
        let request = FingerprintListRequest(url: configuration.serviceURL, headers: headers,
                                             timeout: configuration.requestTimeout,
                                             maximumBodySize: configuration.maximumListSize,
                                             allowsLoopbackHTTP: configuration.serviceURL.isLoopbackHTTP)
        let response = try await fetcher.fetch(request)
        guard (200..<300).contains(response.statusCode) else {
            throw PinStoreError(.network, "The list server answered HTTP \(response.statusCode).")
        }
        guard response.body.count <= configuration.maximumListSize else {
            throw PinStoreError(.invalidListData, "The list is larger than the \(configuration.maximumListSize)-byte limit.")
        }
        let persisted = PersistedList(mode: challenge == nil ? .static : .challenge, body: response.body,
                                      challenge: challenge,
                                      signature: challenge == nil ? nil : response.headers[PinStore.signatureHeader.lowercased()],
                                      extraSignatures: challenge == nil ? nil : response.headers[ListVerifier.extraSignaturesHeader.lowercased()],
                                      nextUpdate: 0)
        return try verifier(keys).verify(persisted)
    }

    /// The pure verifier for `keys` and this configuration.
    func verifier(_ keys: ListKeySet) -> ListVerifier {
        ListVerifier(keys: keys, requireListSignature: configuration.requiresWholeListSignature,
                     mode: configuration.useChallenge ? .challenge : .static)
    }

    /// Verifies signed material, from the network or from the store file, with the keys in force.
    func verify(_ persisted: PersistedList) throws(PinStoreError) -> PinStore.VerifiedList {
        try verifier(state.withLock { $0.keys.current }).verify(persisted)
    }

    /// Puts a verified download in force and saves it. Returns the save error, if any: the
    /// list is in force in this process all the same.
    private func apply(_ verified: PinStore.VerifiedList, now: Date) throws(PinStoreError) -> PinStoreError? {
        let current = inForce.withLock { $0.stored }
        guard try ListAcceptance.check(verified, against: current, at: now) else {
            // The same version as the list in force: nothing changes but the schedule.
            keepCurrentList(now: now)
            return nil
        }
        let valid = try ListAcceptance.validEntries(of: verified, at: now)
        let next = nextUpdate(for: valid, listExpires: verified.expires, now: now)
        var persisted = verified.persisted
        persisted.nextUpdate = next.timeIntervalSince1970
        persisted.updatedAt = now.timeIntervalSince1970
        var saveError: PinStoreError?
        do {
            try file.save(persisted)
        } catch {
            // The verified list is still good for this process; only persistence failed. A
            // restart would bring the older file back, so say so loudly and count it.
            saveError = error
            metrics.saveFailures.increment()
            logger.error("could not save the fingerprint list; it is in force in this process only", metadata: ["reason": "\(error)"])
        }
        install(valid, from: persisted, verified: verified, now: now)
        return saveError
    }

    /// When the next download is due after a list applied at `now`: the deployed clients'
    /// rule, no later than the list's own `expires` (an expired list is updated at once), and
    /// at least a minute (or the periodic interval, when shorter) away however close a pin is
    /// to expiring: every validate acts on this date, in every process.
    private func nextUpdate(for valid: [FingerprintEntry], listExpires: Int64?, now: Date) -> Date {
        var next = UpdateSchedule.nextUpdate(for: valid, now: now, periodicInterval: configuration.periodicUpdateInterval,
                                             expirationThreshold: configuration.expirationUpdateThreshold)
        if let listExpires { next = min(next, Date(timeIntervalSince1970: TimeInterval(listExpires))) }
        return max(next, now.addingTimeInterval(min(Self.minimumUpdateInterval, configuration.periodicUpdateInterval)))
    }

    /// A download brought the version already in force: keep it, and schedule as if applied.
    private func keepCurrentList(now: Date) {
        let (entries, expires) = inForce.withLock { ($0.stored?.index.entries ?? [], $0.listExpires) }
        let valid = entries.filter { $0.isValid(at: now) }
        let next = nextUpdate(for: valid, listExpires: expires == .max ? nil : expires, now: now)
        changingSchedule { $0.schedule.listApplied(nextUpdate: min(next, now.addingTimeInterval(configuration.periodicUpdateInterval))) }
    }

    /// Makes `entries` (verified, from `persisted`) the list in force and tells the store.
    /// `fromFile`: the list was read from the store file at start-up, whose dates nobody signed
    /// and which may be old; see ``RefreshSchedule/dueDate(ofListFromFile:signedTimestamp:now:periodicInterval:)``.
    private func install(_ entries: [FingerprintEntry], from persisted: PersistedList, verified: PinStore.VerifiedList,
                         now: Date, fromFile: Bool = false) {
        let timestamp = verified.timestamp
        // Under ``PinStore/ExpiredListPolicy/refusePins`` no pin outlives its list: every read
        // path (validate, the evaluators, the generation that re-checks pooled connections)
        // then drops the list's pins at the list's `expires`, with nothing checked per decision.
        var entries = entries
        if let listExpires = verified.expires, configuration.expiredListPolicy == .refusePins {
            entries = entries.map { entry in
                entry.expires <= listExpires ? entry
                    : FingerprintEntry(name: entry.name, fingerprint: entry.fingerprint, expires: listExpires,
                                       depth: entry.depth, kind: entry.kind)
            }
        }
        let list = PinStore.StoredList(index: PinIndex(entries: entries), timestamp: timestamp,
                                       updatedAt: persisted.updatedAt, identity: Self.identity(of: persisted),
                                       domainsConfig: verified.domainsConfig, version: verified.version,
                                       certificateTransparency: verified.certificateTransparency)
        // The file's date is not signed (and another process may run with a longer interval):
        // never later than this store's own periodic interval.
        var nextUpdate = fromFile
            ? RefreshSchedule.dueDate(ofListFromFile: persisted, signedTimestamp: timestamp, now: now,
                                      periodicInterval: configuration.periodicUpdateInterval)
            : min(Date(timeIntervalSince1970: persisted.nextUpdate), now.addingTimeInterval(configuration.periodicUpdateInterval))
        if let listExpires = verified.expires {
            nextUpdate = min(nextUpdate, Date(timeIntervalSince1970: TimeInterval(listExpires)))
        }
        // The list and its schedule change together: a decision never sees the new list with
        // the old list's due date.
        changingSchedule { state in
            state.schedule.listApplied(nextUpdate: nextUpdate)
            inForce.withLock { $0.replaceList(list, expires: verified.expires) }
        }
        hooks.withLock { $0 }.listChanged(now)
    }

    /// What tells two saved lists apart: the signed material and the schedule.
    static func identity(of persisted: PersistedList) -> Data {
        var material = Data()
        for part in [persisted.body, Data((persisted.challenge ?? "").utf8), Data((persisted.signature ?? "").utf8),
                     Data("\(persisted.mode.rawValue)|\(persisted.nextUpdate)".utf8)] {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { material.append(contentsOf: $0) }
            material.append(part)
        }
        return SHA256Digest.hash(material)
    }

    private func loadPersistedList() {
        do {
            guard let persisted = try file.load(logger: logger) else { return }
            let verified = try verify(persisted)
            let now = clock.now()
            let valid = verified.entries.filter { $0.isValid(at: now) }
            install(valid, from: persisted, verified: verified, now: now, fromFile: true)
        } catch {
            logger.warning("ignoring the stored fingerprint list", metadata: ["reason": "\(error)", "file": "\(file.url.path)"])
        }
    }

    /// Several processes may share one storage directory (the workers of one server). When
    /// this store's update is due and the file holds a different list that verifies, is not
    /// older (signed timestamps) and is not due itself, another process has just updated it:
    /// take that list instead of downloading. Returns whether it did.
    private func adoptNewerStoredList() -> Bool {
        let now = clock.now()
        guard let persisted = try? file.load(), persisted.nextUpdate > now.timeIntervalSince1970 else { return false }
        let current = inForce.withLock { $0.stored }
        if let current {
            if current.identity == Self.identity(of: persisted) { return false }
            // Newer means downloaded later: a static list has no signed timestamp, so an older
            // file (a save of ours that failed, a list another process had before) must not
            // bring back a pin that has since been removed.
            guard let theirs = persisted.updatedAt, let ours = current.updatedAt, theirs > ours else { return false }
        }
        // The process that saved the list may have followed newer key documents first (verified
        // again here from the configured keys, as at start-up).
        if configuration.keyDocumentURL != nil { loadKeyDocuments() }
        do {
            let verified = try verify(persisted)
            guard try ListAcceptance.check(verified, against: current, at: now) else { return false }
            let valid = verified.entries.filter { $0.isValid(at: now) }
            guard !valid.isEmpty else { return false }
            // Not `fromFile`: another process of this user (the loader refuses anyone else's
            // file) has just downloaded it, so its schedule stands, within this store's interval.
            install(valid, from: persisted, verified: verified, now: now)
            logger.info("adopted the newer fingerprint list another process saved", metadata: ["entries": "\(valid.count)", "identifier": "\(configuration.identifier)"])
            return true
        } catch {
            logger.debug("not adopting the stored fingerprint list", metadata: ["reason": "\(error)"])
            return false
        }
    }
}
