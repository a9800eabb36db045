import CoreMetrics
import Dispatch
import Foundation
import Logging

/// A store of pinned certificate fingerprints, kept fresh from a signed list.
///
/// ```swift
/// let store = try PinStore(configuration: .init(
///     serviceURL: URL(string: "https://pins.example.net/list.json")!,
///     publicKey: "BC3kV9OIDnMu...Nv+XE="))
/// _ = await store.update()                      // at start-up
/// switch store.validate(commonName: "api.example.com", certificateData: leafDER) {
/// case .trusted: break                          // continue the connection
/// case .untrusted, .empty: cancel()             // never send a byte
/// }
/// ```
///
/// `validate` is synchronous, lock-light and safe from any thread, also while an update
/// runs. Concurrent `update` calls share one network request. Pinning is an addition to the
/// platform's normal trust evaluation, never a replacement: adapters run both.
public final class PinStore: Sendable {
    /// The outcome of ``validate(commonName:fingerprint:)``.
    public enum ValidationResult: Sendable, Hashable {
        /// A valid entry for this name pins this certificate.
        case trusted
        /// The name has valid pins, but none for this certificate (or the name is not in
        /// ``Configuration/expectedCommonNames``). Cancel the connection.
        case untrusted
        /// No valid pin exists for the name. Cancel the connection (or update first).
        case empty
    }

    /// The outcome of ``update(mode:)``.
    public enum UpdateResult: Sendable, Hashable {
        /// The store holds a fresh verified list (or no update was due).
        case ok
        /// The verified list had no valid entry; a store still holding valid pins keeps them.
        case storeIsEmpty
        /// The list could not be downloaded.
        case networkError
        /// The list was malformed, too large, or older than the stored one.
        case invalidData
        /// A signature was missing or did not verify with the configured public key.
        case invalidSignature
    }

    /// When ``update(mode:)`` goes to the network.
    public enum UpdateMode: Sendable, Hashable {
        /// Blocking when nothing valid is stored, silent (in the background) when the
        /// scheduled time has passed, otherwise nothing.
        case `default`
        /// Always download now and wait for it.
        case forced
    }

    /// An ``UpdateResult`` with the error behind it, for logs and for callers that want the reason.
    public struct UpdateReport: Sendable {
        /// The result.
        public let result: UpdateResult
        /// The detailed error when ``result`` is not ``UpdateResult/ok``.
        public let error: PinStoreError?
        /// Set when the list was verified and is in force in this process, but could not be
        /// written to the store file (a full disk, a read-only folder): after a restart the
        /// store would load the older file. Also logged at error level and counted in
        /// `pinstore_list_save_failures_total`.
        public let saveError: PinStoreError?
        /// What the update did: downloaded, adopted another process's list, started a download
        /// in the background, or nothing because nothing was due. Tells "the list was
        /// updated" from "the list in force was kept" when ``result`` is ``UpdateResult/ok``.
        public let activity: UpdateActivity

        init(result: UpdateResult, error: PinStoreError?, saveError: PinStoreError? = nil, activity: UpdateActivity = .downloaded) {
            self.result = result
            self.error = error
            self.saveError = saveError
            self.activity = activity
        }
    }

    /// What an update did (``UpdateReport/activity``).
    ///
    /// ```swift
    /// let report = await store.updateWithReport()
    /// switch (report.result, report.activity) {
    /// case (.ok, .downloaded): logger.info("pin list downloaded")
    /// case (.ok, _): logger.debug("pin list kept (\(report.activity))")
    /// default: logger.warning("pin list update failed: \(report.error.map { "\($0)" } ?? "\(report.result)")")
    /// }
    /// ```
    public enum UpdateActivity: Sendable, Hashable {
        /// The list server was asked; with ``UpdateResult/ok`` the list it served was verified
        /// and is in force (an unchanged list counts: it was checked again).
        case downloaded
        /// A newer verified list that another process sharing the storage directory saved was
        /// taken instead of downloading (scheduled updates of ``PinStore/run()``).
        case adoptedFromStoreFile
        /// A valid list is in force and an update was due: a download started in the
        /// background (``UpdateMode/default``) and the caller goes on with the pins it has.
        case startedInBackground
        /// A valid list is in force and nothing was due: nothing was downloaded.
        case notDue
    }

    /// The configuration the store was made with, less its `fallbackData`: the store keeps
    /// the fallback pins parsed and indexed, not the JSON they came in (a large fallback list
    /// would otherwise be held twice).
    public let configuration: Configuration

    let logger: Logger
    let clock: any PinStoreClock
    let fetcher: any FingerprintListFetcher
    /// The key set the configuration ships (``Configuration/publicKey``,
    /// ``Configuration/additionalPublicKeys``): where every key document chain starts.
    let configuredKeys: ListKeySet
    let file: PersistentListFile
    /// Where the key documents accepted so far are kept (``Configuration/keyDocumentFileURL``).
    let keyFile: PersistentListFile
    /// The configuration's fallback pins, consulted after the downloaded ones.
    let fallbackIndex: PinIndex
    /// The configuration's static policies and deny pins (Policies/).
    let staticPins: StaticPins
    /// ``Configuration/expectedCommonNames`` as ``HostName`` texts.
    let expectedNames: Set<String>?
    /// The pin check's rules, in their order (``PinningRules``).
    let rules: PinningRules
    /// The Certificate Transparency part of ``rules`` (its caches and metrics).
    let certificateTransparency: CertificateTransparencyChecker
    /// The ATS transport minimums per host (``Configuration/transportSecurityExceptions``).
    package let transportSecurity: TransportSecurityExceptionTable
    let state: Locked<State>
    let observers = Locked(PinStoreObservers())
    let metrics: PinStoreMetrics
    /// Sends pin-failure reports when ``Configuration/reportURI`` is set (Reports/).
    let reporter: PinFailureReporter?

    struct State {
        /// The verified list in force (nil: nothing downloaded or loaded).
        var stored: StoredList?
        /// When the next silent (scheduled) update is due, with backoff after failures.
        var schedule: RefreshSchedule
        /// The download under way, shared by every caller that needs one.
        var inFlight: Task<UpdateReport, Never>?
        /// When the last download on behalf of a refusal started, for ``updateAfterRefusal()``.
        var lastRefusalUpdate: Date?
        /// Bumped on every change of the list in force, and when a pin expires.
        var generation: UInt64 = 0
        /// When the next pin (list, fallback or policy) expires, Unix seconds: reaching it bumps
        /// ``generation``. `.min`: not known yet (recomputed on the next read, without a bump).
        var nextPinExpiry: Int64 = .min
        /// The list-signing keys in force and the key documents that led to them.
        var keys: TrustedKeys
        /// The `expires` of the list in force (Unix seconds); `.max` when it has none.
        var listExpires: Int64 = .max
        /// The `expires` whose passing has been reported (one log line per list).
        var reportedListExpiry: Int64?
    }

    /// A list whose signature has been verified, on its way in.
    struct VerifiedList: Sendable {
        let persisted: PersistedList
        let entries: [FingerprintEntry]
        let timestamp: Int64?
        /// The whole list's signed `version`, when it has one.
        var version: Int64? = nil
        /// The whole list's signed `expires` (Unix seconds), when it has one.
        var expires: Int64? = nil
        /// The server's per-domain switch: challenge mode only (``DomainsConfig``).
        var domainsConfig: DomainsConfig? = nil
        /// The signed Certificate Transparency section (``CTLogList``), when a signature covers it.
        var certificateTransparency: CTLogList? = nil
    }

    /// What the store keeps of the list in force: its pins, indexed, and what later updates
    /// compare against. The body itself lives in the store file only.
    struct StoredList: Sendable {
        /// The unexpired pins when the list was installed.
        let index: PinIndex
        /// The signed timestamp (challenge mode): the rollback floor.
        let timestamp: Int64?
        /// When the list was downloaded (Unix seconds), for the age gauge.
        let updatedAt: Double?
        /// SHA-256 over the signed material and schedule as saved, to recognise the same file.
        let identity: Data
        /// The server's per-domain switch, re-derived from the signed body on every load
        /// (challenge mode only).
        var domainsConfig: DomainsConfig? = nil
        /// The signed whole-list `version`: a lower one is a rollback, an equal one a no-op.
        var version: Int64? = nil
        /// The signed Certificate Transparency section, re-derived from the body on every load.
        var certificateTransparency: CTLogList? = nil
    }

    /// Creates a store, loading (and re-verifying) any list saved by an earlier run.
    ///
    /// - Throws: ``PinStoreError/Code/invalidConfiguration`` when the configuration cannot
    ///   work: a public key that does not parse, a malformed fallback list, a non-https URL.
    public convenience init(configuration: Configuration, logger: Logger? = nil) throws(PinStoreError) {
        try self.init(configuration: configuration, fetcher: URLSessionListFetcher(), logger: logger)
    }

    /// Creates a store that downloads through `fetcher`.
    public convenience init(configuration: Configuration, fetcher: any FingerprintListFetcher, logger: Logger? = nil) throws(PinStoreError) {
        try self.init(configuration: configuration, fetcher: fetcher, clock: SystemClock(), logger: logger)
    }

    /// Creates a store with an injected clock (tests of expiry and scheduling).
    package init(configuration: Configuration, fetcher: any FingerprintListFetcher, clock: any PinStoreClock,
                 logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil,
                 reportSender: (any PinFailureReportSender)? = nil, reportLimits: PinFailureReporter.Limits = .init()) throws(PinStoreError) {
        let (keySet, fallback, staticPins) = try configuration.validated()
        var kept = configuration
        kept.fallbackData = nil
        self.configuration = kept
        self.logger = logger ?? Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() })
        self.clock = clock
        self.fetcher = fetcher
        self.configuredKeys = keySet
        self.fallbackIndex = fallback
        self.staticPins = staticPins
        self.transportSecurity = try TransportSecurityExceptionTable(configuration.transportSecurityExceptions)
        self.metrics = PinStoreMetrics(identifier: configuration.identifier, factory: metricsFactory ?? MetricsSystem.factory)
        self.reporter = configuration.reportURI.map { uri in
            PinFailureReporter(uri: uri, sender: reportSender ?? URLSessionReportSender(), limits: reportLimits, clock: clock,
                               identifier: configuration.identifier, metricsFactory: metricsFactory ?? MetricsSystem.factory,
                               logger: logger ?? Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
        let expectedNames = configuration.expectedCommonNames.map { Set($0.compactMap(HostName.lookupKey)) }
        self.expectedNames = expectedNames
        let certificateTransparency = CertificateTransparencyChecker(
            configuration: configuration, transportSecurity: transportSecurity, logger: self.logger,
            metricsFactory: metricsFactory ?? MetricsSystem.factory)
        self.certificateTransparency = certificateTransparency
        self.rules = PinningRules(enforcement: configuration.enforcement, expectedNames: expectedNames, staticPins: staticPins,
                                  certificateTransparency: certificateTransparency)
        // A store file is at most a list body in Base64 plus a little (saturating: `.max` means
        // "no limit" to a caller and must not trap).
        let fileLimit = configuration.maximumListSize > (Int.max - 64 * 1024) / 2 ? Int.max : configuration.maximumListSize * 2 + 64 * 1024
        self.file = PersistentListFile(url: configuration.storeFileURL, maximumSize: fileLimit)
        self.keyFile = PersistentListFile(url: configuration.keyDocumentFileURL, maximumSize: KeyChain.maximumStoredSize)
        self.state = Locked(State(stored: nil,
                                  schedule: RefreshSchedule(listDue: .distantPast, periodicInterval: configuration.periodicUpdateInterval),
                                  inFlight: nil, keys: TrustedKeys(configured: keySet)))
        // The keys first: the stored list is verified with the keys in force.
        loadKeyDocuments()
        loadPersistedList()
        warnAboutExpiredPolicies()
        if configuration.enforcement != .enforced || configuration.policies.contains(where: \.reportOnly) {
            // Once per store: report-only shipped by mistake should be visible in the first lines of a log.
            self.logger.info("pinning runs report-only: pin failures are reported, not refused", metadata: [
                "pinstore.identifier": "\(configuration.identifier)",
                "pinstore.enforcement": "\(configuration.enforcement)",
            ])
        }
        let storedPins = state.withLock { $0.stored?.index.pinCount ?? 0 }
        FreedMemory.returnAfterLargeList(pinCount: max(fallbackIndex.pinCount, storedPins))
    }

    deinit {
        finishDecisionStreams()
    }

    // MARK: - Validation

    /// Whether the certificate with SHA-256 `fingerprint` is pinned for host `commonName`.
    ///
    /// Only leaf pins (`depth` 0) can match a lone fingerprint; use
    /// ``validate(commonName:certificateChain:)`` for lists that pin issuers.
    ///
    /// A lone fingerprint cannot show a public key: with ``Configuration/deniedPublicKeys`` set
    /// this answers `.untrusted`, and static policies count only through their certificate pins
    /// at depth 0 (use the chain form for key pins).
    public func validate(commonName: String, fingerprint: Data) -> ValidationResult {
        if _slowPath(!staticPins.isEmpty) { return validateWithPolicies(commonName: commonName, fingerprint: fingerprint) }
        return validateListFingerprint(commonName: commonName, fingerprint: fingerprint)
    }

    /// The fingerprint form against the signed list and the fallback only.
    @inline(__always)
    func validateListFingerprint(commonName: String, fingerprint: Data) -> ValidationResult {
        // A fingerprint that is not 32 bytes can match nothing, but the name may still have pins.
        let digest = Digest32(fingerprint)
        return validate(commonName: commonName) { pin in
            guard let digest else { return false }
            return pin.depth == 0 && pin.fingerprint.constantTimeEquals(digest)
        }
    }

    /// Whether the leaf public key whose SubjectPublicKeyInfo has SHA-256 `publicKeySHA256` is
    /// pinned for `commonName`: by a list key pin on the leaf (`"pin": "spki"`, depth 0) or a
    /// static policy's leaf key pin (``PinIdentity/leafKey(spkiSHA256Base64:)``, a key pin at
    /// depth 0, or ``PinIdentity/anyKey(spkiSHA256Base64:)``).
    ///
    /// A key alone cannot prove certificate pins or CA pins (a host with only those is
    /// `.untrusted`), nor that no denied key is above the leaf: with
    /// ``Configuration/deniedPublicKeys`` set this answers `.untrusted`.
    public func validate(commonName: String, publicKeySHA256: Data) -> ValidationResult {
        guard staticPins.denied.isEmpty else { return .untrusted }
        let digest = Digest32(publicKeySHA256)
        let list = validate(commonName: commonName) { pin in
            guard let digest else { return false }
            return pin.depth == PinIndex.keyDepthBase && pin.fingerprint.constantTimeEquals(digest)
        }
        guard list != .trusted, !staticPins.policies.isEmpty, let host = HostName.lookupKey(commonName) else { return list }
        if let expectedNames, !expectedNames.contains(host) { return .untrusted }
        let policy = staticPins.selection(for: host, now: Int64(clock.now().timeIntervalSince1970.rounded(.down)))?.policy
        if let digest, let policy, !policy.needsChainForEveryMatch {
            for identity in policy.identities where identity.digest.constantTimeEquals(digest) {
                switch identity.identity.kind {
                case .leafKey, .key(0), .anyKey: return .trusted
                default: continue
                }
            }
        }
        return list == .untrusted || policy != nil ? .untrusted : .empty
    }

    /// Whether the certificate `certificateData` (DER) is pinned for host `commonName`.
    ///
    /// With static policies or deny pins configured, the certificate is checked as a chain of
    /// one: leaf key pins can match it, CA pins cannot, and deny pins refuse it (keys above the
    /// leaf cannot be seen).
    public func validate(commonName: String, certificateData: Data) -> ValidationResult {
        if _slowPath(!staticPins.isEmpty) {
            return staticPins.denied.isEmpty ? validateWithPolicies(commonName: commonName, certificateChain: [certificateData]) : .untrusted
        }
        return validate(commonName: commonName, fingerprint: SHA256Digest.hash(certificateData))
    }

    /// Whether the chain a server presented (DER, leaf first) is pinned for `commonName`:
    /// an entry with `depth` d pins the certificate at position d of the chain.
    ///
    /// The chain should be the one the normal trust evaluation validated, so an issuer pin
    /// matches only a certificate that really issued the leaf.
    ///
    /// Static policies and deny pins (``Configuration/policies``) are checked here too, with the
    /// same rule as ``PinningEvaluator``.
    public func validate(commonName: String, certificateChain: [Data]) -> ValidationResult {
        if !staticPins.isEmpty { return validateWithPolicies(commonName: commonName, certificateChain: certificateChain) }
        return validateAgainstList(commonName: commonName, certificateChain: certificateChain)
    }

    /// The chain form against the signed list and the fallback only.
    func validateAgainstList(commonName: String, certificateChain: [Data]) -> ValidationResult {
        var fingerprints = [Digest32?](repeating: nil, count: certificateChain.count)
        var keys: [Digest32]?
        return validate(commonName: commonName) { pin in
            if pin.isKeyPin {
                // Key pins from a list (`"pin": "spki"`): the chain's SPKI digests, read once.
                let chainKeys = keys ?? ValidatedChain(uncheckedCertificates: certificateChain)?.keys ?? []
                keys = chainKeys
                return PinIndex.keyPin(pin, matches: chainKeys)
            }
            guard pin.depth < certificateChain.count else { return false }
            let digest: Digest32?
            if let cached = fingerprints[pin.depth] {
                digest = cached
            } else {
                digest = Digest32(SHA256Digest.hash(certificateChain[pin.depth]))
                fingerprints[pin.depth] = digest
            }
            guard let digest else { return false }
            return pin.fingerprint.constantTimeEquals(digest)
        }
    }

    @inline(__always)
    private func validate(commonName: String, matches: (PinIndex.Pin) -> Bool) -> ValidationResult {
        // A name with an empty label or a control character is nobody's host: refuse it.
        guard let host = HostName.lookupKey(commonName) else { return .untrusted }
        if let expectedNames, !expectedNames.contains(host) {
            return .untrusted
        }
        let (stored, due) = state.withLock { ($0.stored?.index, $0.schedule.dueDate) }
        let date = clock.now()
        // A store in use follows its schedule: the caller goes on with the pins it has while
        // one shared download runs in the background. Costs a compare when nothing is due.
        if date >= due { startScheduledUpdateIfDue(at: date) }
        let now = Int64(date.timeIntervalSince1970.rounded(.down))
        var pinnedName = false
        // Downloaded pins first, then the fallback's: a chain is trusted when any pin matches.
        if let stored, !stored.isEmpty,
           Self.anyValidPin(in: stored, host: host, now: now, pinnedName: &pinnedName, matches: matches) { return .trusted }
        if !fallbackIndex.isEmpty,
           Self.anyValidPin(in: fallbackIndex, host: host, now: now, pinnedName: &pinnedName, matches: matches) { return .trusted }
        return pinnedName ? .untrusted : .empty
    }

    /// Whether a pin for `host` valid at `now` matches; sets `pinnedName` when any valid pin
    /// exists for the host. (A static function with non-escaping closures: nothing allocates.)
    @inline(__always)
    private static func anyValidPin(in index: PinIndex, host: String, now: Int64, pinnedName: inout Bool,
                                    matches: (PinIndex.Pin) -> Bool) -> Bool {
        index.forEachPin(matching: host) { pin in
            guard now < pin.expires else { return false }
            pinnedName = true
            return matches(pin)
        }
    }

    // MARK: - Updates

    /// Brings the list up to date as `mode` says and reports how it went.
    @discardableResult
    public func update(mode: UpdateMode = .default) async -> UpdateResult {
        await updateWithReport(mode: mode).result
    }

    /// Like ``update(mode:)``, with the detailed error behind a failure.
    public func updateWithReport(mode: UpdateMode = .default) async -> UpdateReport {
        let now = clock.now()
        let (hasValidStored, due) = state.withLock { state in
            (state.stored.map { now.timeIntervalSince1970 < Double($0.index.latestExpires) } ?? false, state.schedule.isDue(at: now))
        }
        if mode == .forced || !hasValidStored {
            return await sharedDownload()
        }
        if due {
            // Silent update: the caller goes on with the pins it has.
            _ = startDownloadIfNeeded()
            return UpdateReport(result: .ok, error: nil, activity: .startedInBackground)
        }
        return UpdateReport(result: .ok, error: nil, activity: .notDue)
    }

    /// ``update(mode:)`` for delegate-style code: `completion` runs on `completionQueue`.
    public func update(mode: UpdateMode = .default, completionQueue: DispatchQueue = .main,
                       completion: @escaping @Sendable (UpdateResult) -> Void) {
        Task {
            let result = await self.update(mode: mode)
            completionQueue.async { completion(result) }
        }
    }

    /// Bumped every time the list in force changes (an update applied, a newer list adopted)
    /// and when a pin expires: whoever keeps connections admitted under the pins checks them
    /// again when it changes, so a connection whose only pin expired stops carrying requests
    /// as a new one would be refused. A clock read and a compare when nothing expired.
    package var listGeneration: UInt64 {
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        return state.withLock { state in
            if now >= state.nextPinExpiry {
                if state.nextPinExpiry != .min { state.generation &+= 1 }
                state.nextPinExpiry = nextPinExpiry(after: now, stored: state.stored?.index)
            }
            return state.generation
        }
    }

    /// The earliest expiry later than `now` of any pin in force (Unix seconds; `.max` when none).
    /// A scan of every pin, once per expiry passed.
    private func nextPinExpiry(after now: Int64, stored: PinIndex?) -> Int64 {
        var next = min(stored?.nextExpiry(after: now) ?? .max, fallbackIndex.nextExpiry(after: now))
        for policy in staticPins.policies where policy.expires > now { next = min(next, policy.expires) }
        return next
    }

    /// When the next silent update is due.
    public var nextUpdateDate: Date {
        state.withLock { $0.schedule.dueDate }
    }

    /// Adapters that reuse connections call this for every request: a store in use follows its
    /// schedule even when no new connection (and so no pin check) is made. A clock read and a
    /// compare when nothing is due.
    package func noteUse() {
        let due = state.withLock { $0.schedule.dueDate }
        let now = clock.now()
        if now >= due { startScheduledUpdateIfDue(at: now) }
    }

    /// Starts the shared background download when the schedule says one is due and none is
    /// under way.
    func startScheduledUpdateIfDue(at now: Date) {
        state.withLock { state in
            guard state.inFlight == nil, state.schedule.isDue(at: now) else { return }
            state.inFlight = makeDownloadTask(adoptingNewerFile: true)
        }
    }

    /// The scheduled update ``run()`` waits for: joins one under way, else starts one that
    /// first looks for a newer list another process saved.
    /// Returns nil when the calling task is cancelled first: the download goes on for whoever
    /// else waits for it, but ``run()`` does not wait for a slow list server to stop.
    func scheduledUpdate() async -> UpdateReport? {
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
    static func valueUnlessCancelled(_ task: Task<UpdateReport, Never>) async -> UpdateReport? {
        let waiter = Locked<CheckedContinuation<UpdateReport?, Never>?>(nil)
        @Sendable func resume(_ value: UpdateReport?) {
            waiter.withLock { continuation in
                continuation?.resume(returning: value)
                continuation = nil
            }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<UpdateReport?, Never>) in
                waiter.withLock { $0 = continuation }
                if Task.isCancelled { resume(nil); return }
                Task { resume(await task.value) }
            }
        } onCancel: {
            resume(nil)
        }
    }

    /// The verified, unexpired entries in force (downloaded ones; fallback excluded), sorted
    /// by name; names as the store matches them (lowercase, no trailing dot). Under
    /// ``ExpiredListPolicy/refusePins`` an entry's `expires` is at most its list's `expires`.
    public var storedEntries: [FingerprintEntry] {
        let now = clock.now()
        return (state.withLock { $0.stored?.index.entries } ?? []).filter { $0.isValid(at: now) }
    }

    /// The update adapters run after a refusal (a pin mismatch, or a host without pins), so a
    /// partner's unannounced certificate rotation is picked up at the first connection to the
    /// new certificate: a forced download, shared with one under way, at most one per
    /// ``Configuration/refusalUpdateInterval`` (a minute by default) on behalf of refusals.
    /// Explicit and scheduled updates do not count against that limit. Returns nil when the limit held the download back (the
    /// decision stays as it was).
    ///
    /// - Parameter generation: The ``listGeneration`` the refusal was decided under. When the
    ///   list has changed since (a download that just ended), nothing is downloaded and the
    ///   result is `.ok`: deciding again uses the new list.
    func updateAfterRefusal(decidedUnder generation: UInt64? = nil) async -> UpdateResult? {
        let now = clock.now()
        // Join or start in one critical section: a download that ends between a check and a
        // start must not let refusals chain downloads back to back.
        var listChanged = false
        let download = state.withLock { state -> Task<UpdateReport, Never>? in
            // Joining a download under way (scheduled, explicit or another refusal's) is free
            // and does not start the minute.
            if let running = state.inFlight { return running }
            if let generation, generation != state.generation {
                listChanged = true
                return nil
            }
            if let last = state.lastRefusalUpdate, now >= last,
               now.timeIntervalSince(last) < configuration.refusalUpdateInterval { return nil }
            state.lastRefusalUpdate = now
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

    private func sharedDownload() async -> UpdateReport {
        await startDownloadIfNeeded().value
    }

    private func startDownloadIfNeeded() -> Task<UpdateReport, Never> {
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
    private func makeDownloadTask(adoptingNewerFile: Bool = false) -> Task<UpdateReport, Never> {
        Task { [self] in
            if adoptingNewerFile, self.adoptNewerStoredList() {
                self.state.withLock { $0.inFlight = nil }
                self.metrics.record(.ok)
                return UpdateReport(result: .ok, error: nil, activity: .adoptedFromStoreFile)
            }
            let report = await self.downloadAndApply()
            if report.result == .ok {
                FreedMemory.returnAfterLargeList(pinCount: self.state.withLock { $0.stored?.index.pinCount ?? 0 })
            }
            let now = self.clock.now()
            self.state.withLock { state in
                state.inFlight = nil
                if report.result != .ok { state.schedule.downloadFailed(at: now) }
            }
            self.metrics.record(report.result)
            return report
        }
    }

    private func downloadAndApply() async -> UpdateReport {
        // One time for the whole update: key document expiry, list expiry and the schedule.
        let now = clock.now()
        noteListExpiry(at: now)
        do {
            let keys = try await refreshKeys(at: now)
            let verified = try await download(keys: keys)
            let saveError = try apply(verified, now: now)
            logger.info("fingerprint list updated", metadata: ["entries": "\(verified.entries.count)", "identifier": "\(configuration.identifier)"])
            return UpdateReport(result: .ok, error: nil, saveError: saveError)
        } catch {
            logger.warning("fingerprint list update failed", metadata: ["reason": "\(error)", "identifier": "\(configuration.identifier)"])
            return UpdateReport(result: error.updateResult, error: error)
        }
    }

    private func download(keys: ListKeySet) async throws(PinStoreError) -> VerifiedList {
        var headers: [String: String] = [:]
        var challenge: String?
        if configuration.useChallenge {
            let fresh = try RandomBytes.generate(16).base64EncodedString()
            challenge = fresh
            headers[Self.challengeHeader] = fresh
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
                                      signature: challenge == nil ? nil : response.headers[Self.signatureHeader.lowercased()],
                                      extraSignatures: challenge == nil ? nil : response.headers[ListVerifier.extraSignaturesHeader.lowercased()],
                                      nextUpdate: 0)
        return try verifier(keys).verify(persisted)
    }

    /// The pure verifier for `keys` and this configuration.
    func verifier(_ keys: ListKeySet) -> ListVerifier {
        ListVerifier(keys: keys, requireListSignature: configuration.requireListSignature,
                     mode: configuration.useChallenge ? .challenge : .static)
    }

    /// Verifies signed material, from the network or from the store file, with the keys in force.
    func verify(_ persisted: PersistedList) throws(PinStoreError) -> VerifiedList {
        try verifier(state.withLock { $0.keys.current }).verify(persisted)
    }

    /// Refuses a list older than the one in force: a lower signed timestamp or `version`, or
    /// none at all once one has been seen (else a signed body without one would erase the
    /// floor and let an older list in after it). Returns false when the list has the same
    /// `version` as the one in force: nothing to do.
    private static func checkRollback(_ verified: VerifiedList, against current: StoredList?) throws(PinStoreError) -> Bool {
        if let storedVersion = current?.version {
            guard let newVersion = verified.version else {
                throw PinStoreError(.rollback, "The list has no signed version, but the stored list has version \(storedVersion); refusing a possible rollback.")
            }
            if newVersion < storedVersion {
                throw PinStoreError(.rollback, "The list's version \(newVersion) is lower than the stored list's \(storedVersion); refusing a rollback.")
            }
            if newVersion == storedVersion { return false }
        }
        guard let storedTimestamp = current?.timestamp else { return true }
        guard let newTimestamp = verified.timestamp else {
            throw PinStoreError(.invalidListData, "The list has no timestamp, but the stored list has \(storedTimestamp); refusing a possible rollback.")
        }
        if newTimestamp < storedTimestamp {
            throw PinStoreError(.invalidListData, "The list's timestamp \(newTimestamp) is older than the stored list's \(storedTimestamp); refusing a rollback.")
        }
        return true
    }

    /// Refuses a list past its own `expires` at `now`: a validly signed old list replayed by
    /// whoever answers the list request (a freeze attack) must not count as fresh.
    static func checkNotExpired(_ verified: VerifiedList, at now: Date) throws(PinStoreError) {
        guard let expires = verified.expires, now.timeIntervalSince1970 >= Double(expires) else { return }
        throw PinStoreError(.expired, "The list expired at \(Date(timeIntervalSince1970: TimeInterval(expires))) (version \(verified.version.map(String.init) ?? "none")); it may be an old list replayed. Publish a freshly signed list with a later \"expires\".")
    }

    /// Puts a verified download in force and saves it. Returns the save error, if any: the
    /// list is in force in this process all the same.
    private func apply(_ verified: VerifiedList, now: Date) throws(PinStoreError) -> PinStoreError? {
        let current = state.withLock { $0.stored }
        try Self.checkNotExpired(verified, at: now)
        guard try Self.checkRollback(verified, against: current) else {
            // The same version as the list in force: nothing changes but the schedule.
            keepCurrentList(now: now)
            return nil
        }
        let valid = verified.entries.filter { $0.isValid(at: now) }
        guard !valid.isEmpty else {
            throw PinStoreError(.noValidEntries, verified.entries.isEmpty
                ? "The verified list has no entries; the stored pins are kept."
                : "Every entry of the verified list has expired; the stored pins are kept.")
        }
        // At least a minute (or the periodic interval, when shorter) between downloads, however
        // close a pin is to expiring: every validate acts on this date, in every process.
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
        let (entries, expires) = state.withLock { ($0.stored?.index.entries ?? [], $0.listExpires) }
        let valid = entries.filter { $0.isValid(at: now) }
        let next = nextUpdate(for: valid, listExpires: expires == .max ? nil : expires, now: now)
        state.withLock { $0.schedule.listApplied(nextUpdate: min(next, now.addingTimeInterval(configuration.periodicUpdateInterval))) }
    }

    /// Makes `entries` (verified, from `persisted`) the list in force and tells whoever keeps
    /// trust derived from the old one.
    /// `fromFile`: the list was read from the store file at start-up, whose dates nobody signed
    /// and which may be old; see ``RefreshSchedule/dueDate(ofListFromFile:signedTimestamp:now:periodicInterval:)``.
    private func install(_ entries: [FingerprintEntry], from persisted: PersistedList, verified: VerifiedList,
                         now: Date, fromFile: Bool = false) {
        let timestamp = verified.timestamp
        // Under ``ExpiredListPolicy/refusePins`` no pin outlives its list: every read path
        // (validate, the evaluators, the generation that re-checks pooled connections) then
        // drops the list's pins at the list's `expires`, with nothing checked per decision.
        var entries = entries
        if let listExpires = verified.expires, configuration.expiredListPolicy == .refusePins {
            entries = entries.map { entry in
                entry.expires <= listExpires ? entry
                    : FingerprintEntry(name: entry.name, fingerprint: entry.fingerprint, expires: listExpires,
                                       depth: entry.depth, kind: entry.kind)
            }
        }
        let list = StoredList(index: PinIndex(entries: entries), timestamp: timestamp,
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
        state.withLock { state in
            state.stored = list
            state.listExpires = verified.expires ?? .max
            state.schedule.listApplied(nextUpdate: nextUpdate)
            state.generation &+= 1
            state.nextPinExpiry = .min
        }
        updateGauges(now: now)
        notifyListChanged()
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
        let current = state.withLock { $0.stored }
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
            try Self.checkNotExpired(verified, at: now)
            guard try Self.checkRollback(verified, against: current) else { return false }
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

    /// Refreshes `pinstore_valid_pins` and `pinstore_list_age_seconds`.
    func updateGauges(now: Date) {
        noteListExpiry(at: now)
        let stored = state.withLock { $0.stored }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        metrics.validPins.record((stored?.index.validPinCount(at: seconds) ?? 0) + fallbackIndex.validPinCount(at: seconds))
        if !staticPins.policies.isEmpty { metrics.expiredPolicies.record(staticPins.expiredPolicies(at: seconds).count) }
        let nextExpiry = staticPins.policies.reduce(min(stored?.index.nextExpiry(after: seconds) ?? .max, fallbackIndex.nextExpiry(after: seconds))) {
            $1.expires > seconds ? min($0, $1.expires) : $0
        }
        if nextExpiry < .max { metrics.nextPinExpiry.record(nextExpiry - seconds) }
        if let updatedAt = stored?.updatedAt {
            metrics.listAge.record(max(0, now.timeIntervalSince1970 - updatedAt))
        }
    }

    /// The request header carrying the challenge (challenge mode).
    public static let challengeHeader = "X-Cert-Pinning-Challenge"
    /// The response header carrying the signature (challenge mode).
    public static let signatureHeader = "X-Cert-Pinning-Signature"
}

extension PinStoreError {
    /// The ``PinStore/UpdateResult`` this error stands for.
    public var updateResult: PinStore.UpdateResult {
        switch code {
        case .invalidListSignature, .keyDocumentThresholdNotMet: .invalidSignature
        case .noValidEntries: .storeIsEmpty
        case .network: .networkError
        default: .invalidData
        }
    }
}
