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
/// // leafDER passed the platform's trust evaluation for this host: matchPins runs none
/// switch store.matchPins(commonName: "api.example.com", certificateData: leafDER) {
/// case .trusted: break                          // continue the connection
/// case .untrusted, .empty: cancel()             // never send a byte
/// }
/// ```
///
/// `matchPins` is synchronous, lock-light and safe from any thread, also while an update
/// runs. Concurrent `update` calls share one network request. Pinning is an addition to the
/// platform's normal trust evaluation, never a replacement: adapters run both.
public final class PinStore: Sendable {
    /// The outcome of ``matchPins(commonName:fingerprint:)``.
    ///
    /// A closed set: a pin answer is trusted, untrusted or empty, TrustKit's three, and an app's
    /// exhaustive `switch` over it is how it makes sure every answer ends or continues a
    /// connection. Why a connection was refused grows in ``PinningFailure/Reason`` instead.
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
    ///
    /// Not an enum: a minor release may add results (each comes with a ``PinStoreError`` code
    /// in ``UpdateReport/error``). Compare against the static members, and keep a `default`
    /// in a `switch`:
    ///
    /// ```swift
    /// switch await store.update() {
    /// case .ok: break
    /// case .networkError: retryLater()
    /// default: alert()                    // invalid data or signature, and results added later
    /// }
    /// ```
    public struct UpdateResult: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the static member's, e.g. `"networkError"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// The store holds a fresh verified list (or no update was due).
        public static let ok = UpdateResult("ok")
        /// The verified list had no valid entry; a store still holding valid pins keeps them.
        public static let storeIsEmpty = UpdateResult("storeIsEmpty")
        /// The list could not be downloaded.
        public static let networkError = UpdateResult("networkError")
        /// The list was malformed, too large, or older than the stored one.
        public static let invalidData = UpdateResult("invalidData")
        /// A signature was missing or did not verify with the configured public key.
        public static let invalidSignature = UpdateResult("invalidSignature")

        /// Every result this version can return (the metrics count each from the start).
        static let all: [UpdateResult] = [.ok, .storeIsEmpty, .networkError, .invalidData, .invalidSignature]
    }

    /// When ``update(mode:)`` goes to the network.
    ///
    /// A closed set: an update follows the schedule or goes now; finer control is the
    /// configuration's (intervals, `updateOnEmpty`, `updateOnMismatch`), not new modes.
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
        /// What the update did: downloaded, read the list file, adopted another process's list,
        /// started a download in the background, or nothing because nothing was due. Tells "the list was
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
    ///
    /// Not an enum: a minor release may add activities; keep a `default` (or `_`) in a `switch`.
    public struct UpdateActivity: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the static member's, e.g. `"notDue"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// The list server was asked (an https ``Configuration/serviceURL``); with
        /// ``UpdateResult/ok`` the list it served was verified and is in force (an unchanged
        /// list counts: it was checked again). A list read from a `file:` URL is
        /// ``readFromFile``, never this.
        public static let downloaded = UpdateActivity("downloaded")
        /// The list file was read (a `file:` ``Configuration/serviceURL``, <doc:ListFromAFile>);
        /// with ``UpdateResult/ok`` the list in it was verified and is in force. A read that
        /// failed (a missing file, a FIFO or anything else that is not a regular file, a file
        /// larger than ``Configuration/maximumListSize``) reports this activity too, with the
        /// error that says why: no network was involved.
        public static let readFromFile = UpdateActivity("readFromFile")
        /// A newer verified list that another process sharing the storage directory saved was
        /// taken instead of downloading (scheduled updates of ``PinStore/run()``).
        public static let adoptedFromStoreFile = UpdateActivity("adoptedFromStoreFile")
        /// A valid list is in force and an update was due: a download started in the
        /// background (``UpdateMode/default``) and the caller goes on with the pins it has.
        public static let startedInBackground = UpdateActivity("startedInBackground")
        /// A valid list is in force and nothing was due: nothing was downloaded.
        public static let notDue = UpdateActivity("notDue")
        /// The list server answered `304 Not Modified` to a conditional request (the list in
        /// force's `ETag` or `Last-Modified`): the list in force is current, nothing changed.
        public static let notModified = UpdateActivity("notModified")
    }

    /// The configuration the store was made with, less its `fallbackData`: the store keeps
    /// the fallback pins parsed and indexed, not the JSON they came in (a large fallback list
    /// would otherwise be held twice).
    public let configuration: Configuration

    let logger: Logger
    let clock: any PinStoreClock
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
    /// The CRL part of ``rules`` (its cache, downloads and metrics).
    let crl: CRLChecker
    /// The ATS transport minimums per host (``Configuration/transportSecurityExceptions``).
    package let transportSecurity: TransportSecurityExceptionTable
    /// The read path's state: what every pin decision reads, with one lock.
    let state: Locked<State>
    /// The list's life: downloads, schedule, refusal budget, files, and the trusted state
    /// (``TrustedListState``: keys and list in force). It publishes the list in force to ``state``.
    let updater: ListUpdater
    let observers = Locked(PinStoreObservers())
    let metrics: PinStoreMetrics
    /// Sends pin-failure reports when ``Configuration/reportURI`` is set (Reports/).
    let reporter: PinFailureReporter?

    /// What every pin decision reads, behind one lock. ``ListUpdater`` publishes the list in
    /// force (``publish(_:)``) and when its next update is due (``updateDue``); everything else
    /// here belongs to the read path.
    struct State {
        /// The list in force as every read sees it, with its generation.
        private(set) var list = ListSnapshot.none
        /// When the next pin (list, fallback or policy) expires, Unix seconds: reaching it bumps
        /// the snapshot's ``ListSnapshot/generation``. `.min`: not known yet (recomputed on the
        /// next read, without a bump).
        var nextPinExpiry: Int64 = .min
        /// The `expires` whose passing has been reported (one log line per list).
        var reportedListExpiry: Int64?
        /// When the updater's next scheduled download is due (its ``RefreshSchedule/dueDate``,
        /// published with every change), so a decision checks the schedule in the same lock read.
        var updateDue: Date = .distantPast

        /// Publishes `list` (nil: none) as the list in force under the next generation, so
        /// whoever keeps trust derived from the old list checks it again.
        mutating func publish(_ list: StoredList?) {
            self.list = ListSnapshot(list, generation: self.list.generation &+ 1)
            nextPinExpiry = .min
        }

        /// A pin expired: the same list under the next generation.
        mutating func bumpGeneration() {
            list = list.nextGeneration()
        }
    }

    /// A list whose signature has been verified, on its way in: what ``ListVerifier`` makes
    /// and ``ListUpdater`` checks (``ListAcceptance``) before it goes in force as a
    /// ``StoredList``.
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
        /// The signed `revocations` section (``ListRevocations``), when a signature covers it.
        var revocations: ListRevocations? = nil
        /// The signed `crl` section (``CRLHostList``), when a signature covers it.
        var crl: CRLHostList? = nil
    }

    /// The list in force as ``TrustedListState`` holds it: its pins, indexed, and what later
    /// updates compare against (the signed bytes it came in are kept beside it, in
    /// ``TrustedListState/ListInForce``).
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
        /// The signed whole-list `expires` (Unix seconds), when it has one.
        var expires: Int64? = nil
        /// The signed `revocations` section, re-derived from the body on every load.
        var revocations: ListRevocations? = nil
        /// The signed `crl` section, re-derived from the body on every load.
        var crl: CRLHostList? = nil
    }

    /// Creates a store, loading (and re-verifying) any list saved by an earlier run. It
    /// downloads https lists with ``URLSessionListFetcher`` and reads `file:` lists with
    /// ``FileListFetcher``.
    ///
    /// - Throws: ``PinStoreError/Code/invalidConfiguration`` when the configuration cannot
    ///   work: a public key that does not parse, a malformed fallback list, a non-https URL.
    public convenience init(configuration: Configuration, logger: Logger? = nil) throws(PinStoreError) {
        try self.init(configuration: configuration, fetcher: DefaultListFetcher(), logger: logger)
    }

    /// Creates a store that downloads the list and its key documents through `fetcher`.
    ///
    /// Only those: CRLs (<doc:Revocation>) are always fetched by the store's own unpinned,
    /// ephemeral URLSession (``URLSessionListFetcher``), and pin-failure reports are sent by the
    /// reporter's own session, never through `fetcher`. A proxy or custom client the list needs
    /// is therefore not used for CRL distribution points: a host under a CRL mode needs its
    /// CAs' CRL servers reachable directly (else the CRL is `fetchFailed`, which refuses under
    /// ``CRLCheckMode/enforceHardFail``).
    public convenience init(configuration: Configuration, fetcher: any FingerprintListFetcher, logger: Logger? = nil) throws(PinStoreError) {
        // Random jitter on every schedule, so a fleet started together spreads its downloads.
        try self.init(configuration: configuration, fetcher: fetcher, clock: SystemClock(), logger: logger,
                      jitter: { Double.random(in: 0...1) })
    }

    /// Creates a store with an injected clock (tests of expiry and scheduling). `jitter` gives
    /// each schedule's spread (0 to 1); nil means none, so tests see exact dates.
    package init(configuration: Configuration, fetcher: any FingerprintListFetcher, clock: any PinStoreClock,
                 logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil,
                 reportSender: (any PinFailureReportSender)? = nil, reportLimits: PinFailureReporter.Limits = .init(),
                 jitter: (@Sendable () -> Double)? = nil) throws(PinStoreError) {
        let (keySet, fallback, staticPins) = try configuration.validated()
        var kept = configuration
        kept.fallbackData = nil
        self.configuration = kept
        self.logger = logger ?? Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() })
        self.clock = clock
        self.fallbackIndex = fallback
        self.staticPins = staticPins
        self.transportSecurity = try TransportSecurityExceptionTable(configuration.transportSecurityExceptions)
        let metrics = PinStoreMetrics(identifier: configuration.identifier, factory: metricsFactory ?? MetricsSystem.factory)
        self.metrics = metrics
        self.reporter = configuration.reportURI.map { uri in
            PinFailureReporter(uri: uri, sender: reportSender ?? URLSessionReportSender(), limits: reportLimits, clock: clock,
                               identifier: configuration.identifier, metricsFactory: metricsFactory ?? MetricsSystem.factory,
                               logger: logger ?? Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
        let expectedNames = configuration.expectedCommonNames.map { Set($0.compactMap { (try? HostName($0))?.text }) }
        self.expectedNames = expectedNames
        let certificateTransparency = CertificateTransparencyChecker(
            configuration: configuration, transportSecurity: transportSecurity, logger: self.logger,
            metricsFactory: metricsFactory ?? MetricsSystem.factory)
        self.certificateTransparency = certificateTransparency
        let crl = CRLChecker(defaultMode: configuration.crlMode, budget: configuration.crlFetchBudget,
                             maximumSize: configuration.crlMaximumSize, timeout: configuration.requestTimeout,
                             directory: configuration.storageDirectory ?? Configuration.defaultStorageDirectory, clock: clock,
                             logger: self.logger, identifier: configuration.identifier,
                             metricsFactory: metricsFactory ?? MetricsSystem.factory)
        self.crl = crl
        self.rules = PinningRules(enforcement: configuration.enforcement, expectedNames: expectedNames, staticPins: staticPins,
                                  certificateTransparency: certificateTransparency, crl: crl)
        let state = Locked(State())
        self.state = state
        self.updater = ListUpdater(configuration: kept, configuredKeys: keySet, fetcher: fetcher, clock: clock,
                                   logger: self.logger, metrics: metrics, inForce: state,
                                   jitter: jitter ?? { 0 })
        updater.connect(ListUpdater.Hooks(
            listChanged: { [weak self] now in self?.listChanged(at: now) },
            refreshGauges: { [weak self] now in self?.updateGauges(now: now) },
            updateFinished: { [weak self] report in self?.updateFinished(report) }))
        updater.loadSaved()
        warnAboutExpiredPolicies()
        if configuration.enforcement != .enforced || configuration.policies.contains(where: \.reportOnly) {
            // Once per store: report-only shipped by mistake should be visible in the first lines of a log.
            self.logger.info("pinning runs report-only: pin failures are reported, not refused", metadata: [
                "pinstore.identifier": "\(configuration.identifier)",
                "pinstore.enforcement": "\(configuration.enforcement)",
            ])
        }
        let storedPins = state.withLock { $0.list.index?.pinCount ?? 0 }
        FreedMemory.returnAfterLargeList(pinCount: max(fallbackIndex.pinCount, storedPins))
    }

    deinit {
        finishDecisionStreams()
    }

    // MARK: - Pin matching (formerly `validate`)
    //
    // None of these forms evaluates trust (no anchor, dates or host name check): they answer
    // whether what they are shown is pinned, hence `matchPins` (renamed from `validate` in
    // 0.1.0, which read like a gate). Every form is one decision: the pin rules the adapters run after the trust evaluation
    // (``PinningRules``: expected hosts, Certificate Transparency, deny pins, the pins), over
    // what the form can show (``ChainEvidence``), without the relaxations (report-only,
    // domainsConfig): "is this pinned?". A pin the form cannot show is "cannot tell", which is
    // never `.trusted`, so no form answers `.trusted` where the adapters refuse.

    /// Whether the certificate with SHA-256 `fingerprint` is pinned for host `commonName`.
    ///
    /// A lone fingerprint shows neither a key nor the certificates above the leaf. It proves
    /// certificate pins at depth 0 (a list entry at depth 0, a policy's certificate pin) and
    /// nothing else, so this answers `.untrusted` (never `.trusted`) when the host's decision
    /// needs more: a host whose only pins are key pins, CA pins or pins at depth 1 or more,
    /// any store with ``Configuration/deniedPublicKeys`` (the keys cannot be seen), and a host
    /// under Certificate Transparency enforcement (SCTs need the certificate and its issuer),
    /// and any host while the signed list revokes keys or serial numbers, or certificates not
    /// marked `leaf` (<doc:Revocation>). Use ``matchPins(commonName:certificateChain:)`` to check what the adapters check.
    ///
    /// Changed in issue 30: a host under CT enforcement used to answer `.trusted` here.
    public func matchPins(commonName: String, fingerprint: Data) -> ValidationResult {
        matchPins(commonName: commonName, evidence: .leafOnly(.init(fingerprint: Digest32(fingerprint))))
    }

    /// Whether the leaf public key whose SubjectPublicKeyInfo has SHA-256 `publicKeySHA256` is
    /// pinned for `commonName`: by a list key pin on the leaf (`"pin": "spki"`, depth 0) or a
    /// static policy's leaf key pin (``PinIdentity/leafKey(spkiSHA256Base64:)``, a key pin at
    /// depth 0, or ``PinIdentity/anyKey(spkiSHA256Base64:)``).
    ///
    /// A key alone proves only leaf key pins, so this answers `.untrusted` (never `.trusted`)
    /// when the host's decision needs more: a host whose only pins are certificate pins, CA
    /// pins or pins at depth 1 or more, any store with ``Configuration/deniedPublicKeys`` (no
    /// key above the leaf can be seen), a host under Certificate Transparency enforcement, and
    /// any host while the signed list revokes certificates or serial numbers, or keys not marked
    /// `leaf` (<doc:Revocation>).
    ///
    /// Changed in issue 30: a host under CT enforcement used to answer `.trusted` here.
    public func matchPins(commonName: String, publicKeySHA256: Data) -> ValidationResult {
        matchPins(commonName: commonName, evidence: .leafOnly(.init(key: Digest32(publicKeySHA256))))
    }

    /// Whether the certificate `certificateData` (DER) is pinned for host `commonName`, as a
    /// leaf seen alone: its certificate pins and leaf key pins can match it.
    ///
    /// A certificate alone shows nothing above it, so this answers `.untrusted` (never
    /// `.trusted`) when the host's decision needs more: a host whose only pins are CA pins or
    /// pins at depth 1 or more, any store with ``Configuration/deniedPublicKeys`` (the keys
    /// above the leaf cannot be seen), and a host under Certificate Transparency enforcement
    /// (SCTs are verified with the issuer's key), and any host while the signed list revokes
    /// serial numbers, or keys or certificates not marked `leaf` (<doc:Revocation>); a revoked
    /// leaf is `.untrusted`. Bytes that are not a certificate match
    /// certificate pins by their SHA-256 only.
    ///
    /// Changed in issue 30: a host under CT enforcement used to answer `.trusted` here, and
    /// the list's leaf key pins now match (they did only when static policies were set).
    public func matchPins(commonName: String, certificateData: Data) -> ValidationResult {
        let fingerprint = Digest32(SHA256Digest.hash(certificateData))
        let key = fingerprint.flatMap { ValidatedChain.publicKeyDigest(of: certificateData, fingerprint: $0) }
        // The serial too, so an issuer-and-serial revocation of another certificate does not
        // make every host "cannot tell".
        let serial = fingerprint.flatMap { CertificateSerial.of(certificate: certificateData, fingerprint: $0) }
        return matchPins(commonName: commonName, evidence: .leafOnly(.init(der: certificateData, fingerprint: fingerprint, key: key, serial: serial)))
    }

    /// Whether the chain (DER, leaf first) is pinned for `commonName`, **and nothing else**: no
    /// trust evaluation runs here, so a pinned leaf for another host, past its dates or from an
    /// untrusted issuer answers `.trusted` (the name says what it does: it matches pins). Call it
    /// with a chain the normal trust evaluation has already validated for `commonName`.
    ///
    /// The pin rules are
    /// exactly the ones ``PinningEvaluator``, `PinningTLSVerifier` and the pinned
    /// URLSession run after the trust evaluation (the signed list's revocations, ``Configuration/expectedCommonNames``,
    /// Certificate Transparency, ``Configuration/deniedPublicKeys``, the signed list, the
    /// fallback and ``Configuration/policies``), without report-only or the domainsConfig
    /// relaxing a failure. An entry with `depth` d pins the certificate at position d.
    ///
    /// This does not evaluate trust, nor ATS's certificate minimums (key sizes, signature
    /// digests), which the adapters check with trust, before the rules: pass the chain the normal
    /// trust evaluation validated, so an issuer pin matches only a certificate that really issued
    /// the leaf. A chain with a
    /// certificate that does not parse is `.untrusted`.
    ///
    /// Changed in issue 30: a host under Certificate Transparency enforcement (the signed
    /// list's CT section, ``Configuration/certificateTransparency``, an ATS exception) needs a
    /// leaf with compliant SCTs here too; this used to answer `.trusted` without them when no
    /// static policy or deny pin was configured.
    public func matchPins(commonName: String, certificateChain: [Data]) -> ValidationResult {
        guard let chain = ValidatedChain(alreadyValidatedByCaller: certificateChain) else { return .untrusted }
        return matchPins(commonName: commonName, evidence: .validated(chain))
    }

    /// The one decision behind every `matchPins` form: the rules, not relaxed.
    private func matchPins(commonName: String, evidence: consuming ChainEvidence) -> ValidationResult {
        // A name with an empty label or a control character is nobody's host: refuse it.
        guard let host = try? HostName(commonName) else { return .untrusted }
        switch pinDecision(host: host, requestedName: commonName, evidence: evidence, relaxing: false) {
        case .allow: return .trusted
        case .deny(let failure) where failure.reason.isNoPinsForHost: return .empty
        case .deny, .reportOnly: return .untrusted
        }
    }

    // MARK: - Updates (delegated to the updater)

    /// Brings the list up to date as `mode` says and reports how it went.
    @discardableResult
    public func update(mode: UpdateMode = .default) async -> UpdateResult {
        await updateWithReport(mode: mode).result
    }

    /// Like ``update(mode:)``, with the detailed error behind a failure.
    public func updateWithReport(mode: UpdateMode = .default) async -> UpdateReport {
        let report = await updater.update(mode: mode)
        // Connections the new list refused are closed (asynchronously) before this returns.
        await settleListChanges()
        return report
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
                if state.nextPinExpiry != .min { state.bumpGeneration() }
                state.nextPinExpiry = nextPinExpiry(after: now, stored: state.list.index)
            }
            return state.list.generation
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
        updater.nextUpdateDate
    }

    /// The version of the key set lists are verified with now: the configuration's
    /// ``Configuration/trustedKeyVersion`` until a key document has been accepted.
    public var keySetVersion: Int64 {
        updater.keySetVersion
    }

    /// Adapters that reuse connections call this for every request: a store in use follows its
    /// schedule even when no new connection (and so no pin check) is made. A clock read and a
    /// compare when nothing is due.
    package func noteUse() {
        let due = state.withLock { $0.updateDue }
        let now = clock.now()
        if now >= due { startScheduledUpdateIfDue(at: now) }
    }

    /// Starts the shared background download when the schedule says one is due and none is
    /// under way.
    func startScheduledUpdateIfDue(at now: Date) {
        updater.startScheduledUpdateIfDue(at: now)
    }

    /// The verified, unexpired entries in force (downloaded ones; fallback excluded), sorted
    /// by name; names as the store matches them (lowercase, no trailing dot). Under
    /// ``ExpiredListPolicy/refusePins`` an entry's `expires` is at most its list's `expires`.
    public var storedEntries: [FingerprintEntry] {
        let now = clock.now()
        return (state.withLock { $0.list.index?.entries } ?? []).filter { $0.isValid(at: now) }
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
        await updater.updateAfterRefusal(decidedUnder: generation)
    }

    // MARK: - What derives from the list in force

    /// The list in force changed (the updater installed, adopted or dropped one).
    func listChanged(at now: Date) {
        updateGauges(now: now)
        notifyListChanged()
    }

    /// Whether the list in force is past its own `expires` at `now`.
    func listIsExpired(at now: Date) -> Bool {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        return state.withLock { seconds >= $0.list.expires }
    }

    /// Reports, once per list, that the list in force has passed its `expires`: one log line
    /// and the `pinstore_list_expired` gauge (decisions say it through
    /// ``PinningEvent/listExpired``). Cheap when nothing expired: one lock and a compare.
    func noteListExpiry(at now: Date) {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let newlyExpired: Int64? = state.withLock { state in
            guard seconds >= state.list.expires else { return nil }
            guard state.reportedListExpiry != state.list.expires else { return nil }
            state.reportedListExpiry = state.list.expires
            return state.list.expires
        }
        metrics.listExpired.record(seconds >= state.withLock({ $0.list.expires }) ? 1 : 0)
        guard let newlyExpired else { return }
        logger.warning("the fingerprint list in force has expired; updating now", metadata: [
            "pinstore.identifier": "\(configuration.identifier)",
            "pinstore.expires": "\(Date(timeIntervalSince1970: TimeInterval(newlyExpired)))",
            "pinstore.expiredListPolicy": "\(configuration.expiredListPolicy == .refusePins ? "refusePins" : "keepPins")",
        ])
    }

    /// Refreshes `pinstore_valid_pins` and `pinstore_list_age_seconds`.
    func updateGauges(now: Date) {
        noteListExpiry(at: now)
        let list = state.withLock { $0.list }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        metrics.validPins.record((list.index?.validPinCount(at: seconds) ?? 0) + fallbackIndex.validPinCount(at: seconds))
        if !staticPins.policies.isEmpty { metrics.expiredPolicies.record(staticPins.expiredPolicies(at: seconds).count) }
        let nextExpiry = staticPins.policies.reduce(min(list.index?.nextExpiry(after: seconds) ?? .max, fallbackIndex.nextExpiry(after: seconds))) {
            $1.expires > seconds ? min($0, $1.expires) : $0
        }
        if nextExpiry < .max { metrics.nextPinExpiry.record(nextExpiry - seconds) }
        if let updatedAt = list.updatedAt {
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
        case .network, .deadlineExceeded: .networkError
        default: .invalidData
        }
    }
}
