import Foundation
import Logging

/// The I/O of the signed list: the one download under way, the schedule, the refusal budget,
/// and the store and key-document files. What is trusted (the key set, the list in force, the
/// rollback floor) lives in ``TrustedListState``, which alone verifies and accepts; the updater
/// fetches and reads bytes, feeds them in, and publishes the result.
///
/// Why it is a type of its own: ``PinStore`` answers pin decisions from any thread, many times
/// a second, and needs only the list in force; everything that changes that list is slow,
/// stateful and time-driven. Kept apart, the read path stays one lock read
/// (``PinStore/pinSnapshot()``, ``PinStore/listGeneration``) and the update path can be driven
/// alone in tests with a ``FingerprintListFetcher`` and a ``PinStoreClock``.
///
/// Every change of the trusted state goes through ``changingTrust(at:_:)``; when the list in
/// force changed, it publishes the store's snapshot (``PinStore/State/publish(_:)``) with the
/// list's due date through the one install path, ``publish(_:nextUpdate:)``.
/// Lock order: ``trust``, then ``state``, then the read state's; the read path never takes
/// either of the updater's locks while it holds its own.
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
        /// An update ran and ended with this report (``PinStore/updates(bufferingNewest:)``).
        var updateFinished: @Sendable (PinStore.UpdateReport) -> Void = { _ in }
    }

    struct State {
        /// When the next silent (scheduled) update is due, with backoff after failures.
        var schedule: RefreshSchedule
        /// The download under way, shared by every caller that needs one.
        var inFlight: Task<PinStore.UpdateReport, Never>?
        /// Downloads started on behalf of refusals (``updateAfterRefusal(decidedUnder:)``).
        var refusalBudget: RefusalBudget
        /// The list server's validators of the list in force (`ETag`, `Last-Modified`), sent
        /// back as `If-None-Match` / `If-Modified-Since` so an unchanged list costs a 304.
        var validators: ListValidators?
    }

    /// What a list server said about the bytes of the list in force.
    struct ListValidators: Sendable, Equatable {
        var etag: String?
        var lastModified: String?
        /// The identity of the list they belong to (``PinStore/StoredList/identity``).
        var listIdentity: Data
    }

    /// What one download brought.
    enum Downloaded: Sendable {
        /// A body to verify, with the validators the server sent.
        case list(PersistedList, etag: String?, lastModified: String?)
        /// 304: the list in force is current.
        case notModified
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
    /// The store's read state: where the list in force is published.
    let inForce: Locked<PinStore.State>
    let state: Locked<State>
    /// The key set and the list in force. Its lock is held by each change from verification to
    /// publication, so changes happen one at a time and none slips in between a check and its
    /// effect; decisions never take it (they read the published snapshot).
    let trust: Locked<TrustedListState>
    let hooks = Locked(Hooks())
    /// A fraction from 0 to 1 for each schedule's jitter (random; fixed in tests).
    let jitter: @Sendable () -> Double

    /// An updater for `configuration` (validated: `configuredKeys` is its key set) that puts the
    /// lists it accepts in force in `inForce`. Reads nothing yet: see ``loadSaved()``.
    init(configuration: PinStore.Configuration, configuredKeys: ListKeySet, fetcher: any FingerprintListFetcher,
         clock: any PinStoreClock, logger: Logger, metrics: PinStoreMetrics, inForce: Locked<PinStore.State>,
         jitter: @escaping @Sendable () -> Double = { 0 }) {
        self.jitter = jitter
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
                                  refusalBudget: RefusalBudget(interval: configuration.refusalUpdateInterval)))
        self.trust = Locked(TrustedListState(configuredKeys: configuredKeys, options: TrustedListState.Options(
            requireListSignature: configuration.requiresWholeListSignature,
            mode: configuration.useChallenge ? .challenge : .static,
            capsPinsAtListExpiry: configuration.expiredListPolicy == .refusePins)))
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

    /// The one install path: publishes `list` (nil: none) as the store's snapshot together with
    /// the due date a new list brings (`nextUpdate`; nil keeps the schedule), so a decision never
    /// sees the new list with the old list's due date.
    private func publish(_ list: PinStore.StoredList?, nextUpdate: Date?) {
        state.withLock { state in
            if let nextUpdate { state.schedule.listApplied(nextUpdate: nextUpdate) }
            let due = state.schedule.dueDate
            inForce.withLock { readState in
                readState.publish(list)
                readState.updateDue = due
            }
        }
    }

    /// Runs `body` on the trusted state: the only way the key set or the list in force changes.
    ///
    /// When the list in force changed (``TrustedListState/listRevision``), the store's snapshot
    /// is republished in the same critical section (``publish(_:nextUpdate:)``), with the due
    /// date `body` left in its second argument (a new list brings its schedule; a dropped
    /// one leaves the schedule as it was), also when `body` throws after a change (a key
    /// rotation that dropped the list, then an expired key document). The store hears of it
    /// after the lock is released: its observers may read the store.
    @discardableResult
    func changingTrust<Value>(at now: Date,
                              _ body: (inout TrustedListState, inout Date?) throws(PinStoreError) -> Value) throws(PinStoreError) -> Value {
        let (result, changed) = trust.withLock { trusted -> (Result<Value, PinStoreError>, Bool) in
            let revision = trusted.listRevision
            var nextUpdate: Date?
            let result: Result<Value, PinStoreError>
            do throws(PinStoreError) {
                result = .success(try body(&trusted, &nextUpdate))
            } catch {
                result = .failure(error)
            }
            guard trusted.listRevision != revision else { return (result, false) }
            publish(trusted.inForce?.list, nextUpdate: nextUpdate)
            return (result, true)
        }
        if changed { hooks.withLock { $0 }.listChanged(now) }
        return try result.get()
    }

    // MARK: - Updates

    /// Brings the list up to date as `mode` says (``PinStore/updateWithReport(mode:)``).
    func update(mode: PinStore.UpdateMode) async -> PinStore.UpdateReport {
        let now = clock.now()
        let hasValidStored = inForce.withLock { state in
            state.list.index.map { now.timeIntervalSince1970 < Double($0.latestExpires) } ?? false
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
            if let generation, generation != inForce.withLock({ $0.list.generation }) {
                listChanged = true
                return nil
            }
            // The list server asked for a pause (429 or 503 with Retry-After): refusals wait too.
            if state.schedule.serverAskedToWait(at: now) != nil { return nil }
            guard state.refusalBudget.spend(at: now) else { return nil }
            let task = makeDownloadTask(byRefusal: true)
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
    private func makeDownloadTask(adoptingNewerFile: Bool = false, byRefusal: Bool = false) -> Task<PinStore.UpdateReport, Never> {
        Task { [self] in
            if adoptingNewerFile, self.adoptNewerStoredList() {
                self.state.withLock { $0.inFlight = nil }
                self.metrics.record(.ok)
                let report = PinStore.UpdateReport(result: .ok, error: nil, activity: .adoptedFromStoreFile)
                self.hooks.withLock { $0 }.updateFinished(report)
                return report
            }
            let generation = self.inForce.withLock { $0.list.generation }
            let (report, retryAfter) = await self.downloadAndApply()
            if report.result == .ok {
                FreedMemory.returnAfterLargeList(pinCount: self.inForce.withLock { $0.list.index?.pinCount ?? 0 })
            }
            let now = self.clock.now()
            let changed = self.inForce.withLock { $0.list.generation } != generation
            let jitter = self.jitter()
            self.changingSchedule { state in
                state.inFlight = nil
                if report.result != .ok { state.schedule.downloadFailed(at: now, retryAfter: retryAfter, jitter: jitter) }
                state.refusalBudget.downloadEnded(at: now, outcome: report.result != .ok ? .failed : changed ? .newList : .unchanged,
                                                  byRefusal: byRefusal, jitter: jitter)
            }
            self.metrics.record(report.result)
            self.hooks.withLock { $0 }.updateFinished(report)
            return report
        }
    }

    /// Downloads and applies the list; the server's Retry-After (seconds) when it answered 429
    /// or 503 with one.
    private func downloadAndApply() async -> (PinStore.UpdateReport, TimeInterval?) {
        // One time for the whole update: key document expiry, list expiry and the schedule.
        let now = clock.now()
        // A list in force past its `expires` is reported before the update that replaces it.
        hooks.withLock { $0 }.refreshGauges(now)
        var retryAfter: TimeInterval?
        // What the update did, said as it was: a file read is not a download.
        let activity: PinStore.UpdateActivity = configuration.serviceURL.isFileURL ? .readFromFile : .downloaded
        do {
            try await refreshKeys(at: now)
            switch try await download(retryAfter: &retryAfter) {
            case .notModified:
                let current = trust.withLock { $0.inForce?.list }
                keepCurrentList(current, now: now)
                logger.debug("fingerprint list not modified", metadata: ["pinstore.identifier": "\(configuration.identifier)"])
                return (PinStore.UpdateReport(result: .ok, error: nil, activity: .notModified), nil)
            case .list(let list, let etag, let lastModified):
                let saveError = try apply(list, now: now)
                let identity = trust.withLock { $0.inForce?.list.identity }
                state.withLock { state in
                    state.validators = identity.flatMap { identity in
                        etag == nil && lastModified == nil ? nil : ListValidators(etag: etag, lastModified: lastModified, listIdentity: identity)
                    }
                }
                logger.info("fingerprint list updated", metadata: ["pinstore.identifier": "\(configuration.identifier)"])
                return (PinStore.UpdateReport(result: .ok, error: nil, saveError: saveError, activity: activity), nil)
            }
        } catch {
            logger.warning("fingerprint list update failed", metadata: ["pinstore.reason": "\(error)", "pinstore.identifier": "\(configuration.identifier)"])
            return (PinStore.UpdateReport(result: error.updateResult, error: error, activity: activity), retryAfter)
        }
    }

    /// Downloads the list (not verified yet: that is ``TrustedListState/acceptList(_:at:)``'s
    /// part). A static list in force is asked for conditionally: its validators go with the
    /// request, and a 304 means it is current. A challenge-mode list never is (each response
    /// is signed over a new challenge).
    private func download(retryAfter: inout TimeInterval?) async throws(PinStoreError) -> Downloaded {
        var headers: [String: String] = [:]
        var challenge: String?
        var conditional = false
        if configuration.useChallenge {
            let fresh = try RandomBytes.generate(16).base64EncodedString()
            challenge = fresh
            headers[PinStore.challengeHeader] = fresh
        } else if let validators = state.withLock({ $0.validators }),
                  validators.listIdentity == trust.withLock({ $0.inForce?.list.identity }) {
            if let etag = validators.etag { headers["If-None-Match"] = etag }
            if let lastModified = validators.lastModified { headers["If-Modified-Since"] = lastModified }
            conditional = true
        }
        let request = FingerprintListRequest(url: configuration.serviceURL, headers: headers,
                                             timeout: configuration.requestTimeout,
                                             maximumBodySize: configuration.maximumListSize,
                                             allowsLoopbackHTTP: configuration.serviceURL.isLoopbackHTTP)
        let response = try await fetcher.fetchWithinDeadline(request)
        if response.statusCode == 304 {
            guard conditional else {
                throw PinStoreError(.network, "The list server answered 304 Not Modified to a request that was not conditional.")
            }
            return .notModified
        }
        guard (200..<300).contains(response.statusCode) else {
            if response.statusCode == 429 || response.statusCode == 503 {
                retryAfter = response.headers["retry-after"].flatMap { Self.retryAfterSeconds($0, now: clock.now()) }
            }
            throw PinStoreError(.network, "The list server answered HTTP \(response.statusCode)\(retryAfter.map { "; it asked for no request for \(Int($0)) s (Retry-After), and none is made before" } ?? "").")
        }
        guard response.body.count <= configuration.maximumListSize else {
            throw PinStoreError(.invalidListData, "The list is larger than the \(configuration.maximumListSize)-byte limit.")
        }
        // Validators are kept only when short and printable (they are sent back as headers).
        func validator(_ name: String) -> String? {
            guard let value = response.headers[name], value.utf8.count <= 256,
                  value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) else { return nil }
            return value
        }
        let list = PersistedList(mode: challenge == nil ? .static : .challenge, body: response.body,
                                 challenge: challenge,
                                 signature: challenge == nil ? nil : response.headers[PinStore.signatureHeader.lowercased()],
                                 extraSignatures: challenge == nil ? nil : response.headers[ListVerifier.extraSignaturesHeader.lowercased()],
                                 nextUpdate: 0)
        return .list(list, etag: challenge == nil ? validator("etag") : nil, lastModified: challenge == nil ? validator("last-modified") : nil)
    }

    /// The seconds a `Retry-After` value asks for: delay-seconds, or an HTTP-date (IMF-fixdate)
    /// from `now`; nil when it is neither, or in the past.
    static func retryAfterSeconds(_ value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard text.utf8.count <= 64 else { return nil }
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return text.count > 10 ? nil : TimeInterval(text)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds > 0 ? seconds : nil
    }

    /// Verifies signed material, from the network or from the store file, with the keys in
    /// force; changes nothing.
    func verify(_ persisted: PersistedList) throws(PinStoreError) -> PinStore.VerifiedList {
        try trust.withLock { $0 }.verify(persisted)
    }

    /// Offers a download to the trusted state and, when it went in force, saves it. Returns
    /// the save error, if any: the list is in force in this process all the same.
    private func apply(_ downloaded: PersistedList, now: Date) throws(PinStoreError) -> PinStoreError? {
        var material = downloaded
        material.updatedAt = now.timeIntervalSince1970
        return try changingTrust(at: now) { trusted, nextUpdate throws(PinStoreError) -> PinStoreError? in
            guard case .installed(let valid) = try trusted.acceptList(material, at: now) else {
                // The same version as the list in force: nothing changes but the schedule.
                keepCurrentList(trusted.inForce?.list, now: now)
                return nil
            }
            let listExpires = trusted.inForce?.list.expires
            let next = self.nextUpdate(for: valid, listExpires: listExpires, now: now)
            nextUpdate = listExpires.map { min(next, Date(timeIntervalSince1970: TimeInterval($0))) } ?? next
            var saved = material
            saved.nextUpdate = next.timeIntervalSince1970
            do throws(PinStoreError) {
                try file.save(saved)
                return nil
            } catch {
                // The verified list is still good for this process; only persistence failed. A
                // restart would bring the older file back, so say so loudly and count it.
                metrics.saveFailures.increment()
                logger.error("could not save the fingerprint list; it is in force in this process only", metadata: ["pinstore.reason": "\(error)"])
                return error
            }
        }
    }

    /// When the next download is due after a list applied at `now`: the deployed clients'
    /// rule, no later than the list's own `expires` (an expired list is updated at once), and
    /// at least a minute (or the periodic interval, when shorter) away however close a pin is
    /// to expiring: every validate acts on this date, in every process.
    private func nextUpdate(for valid: [FingerprintEntry], listExpires: Int64?, now: Date) -> Date {
        var next = UpdateSchedule.nextUpdate(for: valid, now: now, periodicInterval: configuration.periodicUpdateInterval,
                                             expirationThreshold: configuration.expirationUpdateThreshold)
        if let listExpires { next = min(next, Date(timeIntervalSince1970: TimeInterval(listExpires))) }
        let earliest = now.addingTimeInterval(min(Self.minimumUpdateInterval, configuration.periodicUpdateInterval))
        // Stores that applied a list together (a fleet started together) spread their next one.
        return max(RefreshSchedule.jittered(next, now: now, earliest: earliest, jitter: jitter()), earliest)
    }

    /// A download brought the version already in force (`current`): keep it, and schedule as
    /// if applied.
    private func keepCurrentList(_ current: PinStore.StoredList?, now: Date) {
        let valid = (current?.index.entries ?? []).filter { $0.isValid(at: now) }
        let next = nextUpdate(for: valid, listExpires: current?.expires, now: now)
        changingSchedule { $0.schedule.listApplied(nextUpdate: min(next, now.addingTimeInterval(configuration.periodicUpdateInterval))) }
    }

    /// The list an earlier run (or another process) saved, at start-up: in force again once the
    /// trusted state has verified it with the keys in force.
    private func loadPersistedList() {
        do {
            guard let persisted = try file.load(logger: logger) else { return }
            let now = clock.now()
            try changingTrust(at: now) { trusted, nextUpdate throws(PinStoreError) in
                let verified = try trusted.restoreList(persisted, at: now)
                // The file's date is not signed (and another process may run with a longer
                // interval): never later than this store's own periodic interval.
                var next = RefreshSchedule.dueDate(ofListFromFile: persisted, signedTimestamp: verified.timestamp, now: now,
                                                   periodicInterval: configuration.periodicUpdateInterval)
                if let listExpires = verified.expires { next = min(next, Date(timeIntervalSince1970: TimeInterval(listExpires))) }
                nextUpdate = next
            }
        } catch {
            logger.warning("ignoring the stored fingerprint list", metadata: ["pinstore.reason": "\(error)", "pinstore.file": "\(file.url.path)"])
        }
    }

    /// Several processes may share one storage directory (the workers of one server). When
    /// this store's update is due, it first takes the key documents another process accepted
    /// (the trusted state verifies the list in force again with them, and drops it if they did
    /// not sign it). Then, when the file holds a different list that verifies, is not older
    /// (signed timestamps) and is not due itself, another process has just updated it: take
    /// that list instead of downloading. Returns whether it did.
    private func adoptNewerStoredList() -> Bool {
        loadKeyDocuments()
        let now = clock.now()
        guard let persisted = try? file.load(), persisted.nextUpdate > now.timeIntervalSince1970 else { return false }
        do {
            return try changingTrust(at: now) { trusted, nextUpdate throws(PinStoreError) -> Bool in
                if let current = trusted.inForce?.list {
                    if current.identity == TrustedListState.identity(of: persisted) { return false }
                    // Newer means downloaded later: a static list has no signed timestamp, so an
                    // older file (a save of ours that failed, a list another process had before)
                    // must not bring back a pin that has since been removed.
                    guard let theirs = persisted.updatedAt, let ours = current.updatedAt, theirs > ours else { return false }
                }
                guard case .installed(let valid) = try trusted.acceptList(persisted, at: now) else { return false }
                // Another process of this user (the loader refuses anyone else's file) has just
                // downloaded it, so its schedule stands, within this store's interval.
                var next = min(Date(timeIntervalSince1970: persisted.nextUpdate), now.addingTimeInterval(configuration.periodicUpdateInterval))
                if let listExpires = trusted.inForce?.list.expires { next = min(next, Date(timeIntervalSince1970: TimeInterval(listExpires))) }
                nextUpdate = next
                logger.info("adopted the newer fingerprint list another process saved", metadata: ["pinstore.entries": "\(valid.count)", "pinstore.identifier": "\(configuration.identifier)"])
                return true
            }
        } catch {
            logger.debug("not adopting the stored fingerprint list", metadata: ["pinstore.reason": "\(error)"])
            return false
        }
    }
}
