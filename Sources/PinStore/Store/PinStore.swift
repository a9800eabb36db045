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
    }

    /// The configuration the store was made with.
    public let configuration: Configuration

    let logger: Logger
    let clock: any PinStoreClock
    let fetcher: any FingerprintListFetcher
    let verifier: ListSignatureVerifier
    let file: PersistentListFile
    let fallbackEntries: [FingerprintEntry]
    let expectedNames: Set<String>?
    let state: Locked<State>
    let observers = Locked(PinStoreObservers())
    let metrics: PinStoreMetrics

    struct State {
        /// The verified list in force (nil: nothing downloaded or loaded).
        var stored: VerifiedList?
        /// Stored plus fallback entries, indexed.
        var index: PinIndex
        /// When the next silent (scheduled) update is due, with backoff after failures.
        var schedule: RefreshSchedule
        /// The download under way, shared by every caller that needs one.
        var inFlight: Task<UpdateReport, Never>?
        /// When the last download on behalf of a refusal started, for ``updateAfterRefusal()``.
        var lastRefusalUpdate: Date?
        /// Bumped on every change of the list in force.
        var generation: UInt64 = 0
    }

    /// A list whose signature has been verified.
    struct VerifiedList: Sendable {
        let persisted: PersistedList
        let entries: [FingerprintEntry]
        let timestamp: Int64?
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
                 logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil) throws(PinStoreError) {
        let (publicKey, fallback) = try configuration.validated()
        self.configuration = configuration
        self.logger = logger ?? Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() })
        self.clock = clock
        self.fetcher = fetcher
        self.verifier = ListSignatureVerifier(publicKey: publicKey)
        self.fallbackEntries = fallback
        self.metrics = PinStoreMetrics(identifier: configuration.identifier, factory: metricsFactory ?? MetricsSystem.factory)
        self.expectedNames = configuration.expectedCommonNames.map { Set($0.map(HostName.normalized)) }
        // A store file is at most a list body in Base64 plus a little.
        self.file = PersistentListFile(url: configuration.storeFileURL, maximumSize: configuration.maximumListSize * 2 + 64 * 1024)
        self.state = Locked(State(stored: nil, index: PinIndex(entries: fallback),
                                  schedule: RefreshSchedule(listDue: .distantPast, periodicInterval: configuration.periodicUpdateInterval),
                                  inFlight: nil))
        loadPersistedList()
    }

    // MARK: - Validation

    /// Whether the certificate with SHA-256 `fingerprint` is pinned for host `commonName`.
    ///
    /// Only leaf pins (`depth` 0) can match a lone fingerprint; use
    /// ``validate(commonName:certificateChain:)`` for lists that pin issuers.
    public func validate(commonName: String, fingerprint: Data) -> ValidationResult {
        // A fingerprint that is not 32 bytes can match nothing, but the name may still have pins.
        let digest = Digest32(fingerprint)
        return validate(commonName: commonName) { pin in
            guard let digest else { return false }
            return pin.depth == 0 && pin.fingerprint.constantTimeEquals(digest)
        }
    }

    /// Whether the certificate `certificateData` (DER) is pinned for host `commonName`.
    public func validate(commonName: String, certificateData: Data) -> ValidationResult {
        validate(commonName: commonName, fingerprint: SHA256Digest.hash(certificateData))
    }

    /// Whether the chain a server presented (DER, leaf first) is pinned for `commonName`:
    /// an entry with `depth` d pins the certificate at position d of the chain.
    ///
    /// The chain should be the one the normal trust evaluation validated, so an issuer pin
    /// matches only a certificate that really issued the leaf.
    public func validate(commonName: String, certificateChain: [Data]) -> ValidationResult {
        var fingerprints = [Digest32?](repeating: nil, count: certificateChain.count)
        return validate(commonName: commonName) { pin in
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
        let (index, due) = state.withLock { ($0.index, $0.schedule.dueDate) }
        let date = clock.now()
        // A store in use follows its schedule: the caller goes on with the pins it has while
        // one shared download runs in the background. Costs a compare when nothing is due.
        if date >= due { startScheduledUpdateIfDue(at: date) }
        if index.isEmpty { return .empty }
        let now = Int64(date.timeIntervalSince1970.rounded(.down))
        var pinnedName = false
        var trusted = false
        index.forEachPin(matching: host) { pin in
            guard now < pin.expires else { return false }
            pinnedName = true
            if matches(pin) {
                trusted = true
                return true
            }
            return false
        }
        return trusted ? .trusted : (pinnedName ? .untrusted : .empty)
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
            (state.stored?.entries.contains { $0.isValid(at: now) } ?? false, state.schedule.isDue(at: now))
        }
        if mode == .forced || !hasValidStored {
            return await sharedDownload()
        }
        if due {
            // Silent update: the caller goes on with the pins it has.
            _ = startDownloadIfNeeded()
        }
        return UpdateReport(result: .ok, error: nil)
    }

    /// ``update(mode:)`` for delegate-style code: `completion` runs on `completionQueue`.
    public func update(mode: UpdateMode = .default, completionQueue: DispatchQueue = .main,
                       completion: @escaping @Sendable (UpdateResult) -> Void) {
        Task {
            let result = await self.update(mode: mode)
            completionQueue.async { completion(result) }
        }
    }

    /// Bumped every time the list in force changes (an update applied, a newer list adopted).
    package var listGeneration: UInt64 {
        state.withLock { $0.generation }
    }

    /// When the next silent update is due.
    public var nextUpdateDate: Date {
        state.withLock { $0.schedule.dueDate }
    }

    /// Starts the shared background download when the schedule says one is due and none is
    /// under way.
    func startScheduledUpdateIfDue(at now: Date) {
        state.withLock { state in
            guard state.inFlight == nil, state.schedule.isDue(at: now) else { return }
            state.inFlight = makeDownloadTask()
        }
    }

    /// The verified, unexpired entries in force (downloaded ones; fallback excluded).
    public var storedEntries: [FingerprintEntry] {
        let now = clock.now()
        return state.withLock { $0.stored?.entries ?? [] }.filter { $0.isValid(at: now) }
    }

    /// The update adapters run after a refusal (a pin mismatch, or a host without pins), so a
    /// partner's unannounced certificate rotation is picked up at the first connection to the
    /// new certificate: a forced download, shared with one under way, at most one a minute on
    /// behalf of refusals (``refusalUpdateInterval``). Explicit and scheduled updates do not
    /// count against that limit. Returns nil when the limit held the download back (the
    /// decision stays as it was).
    package func updateAfterRefusal() async -> UpdateResult? {
        let now = clock.now()
        let allowed = state.withLock { state -> Bool in
            if state.inFlight != nil { return true }
            if let last = state.lastRefusalUpdate, now >= last,
               now.timeIntervalSince(last) < Self.refusalUpdateInterval { return false }
            state.lastRefusalUpdate = now
            return true
        }
        guard allowed else { return nil }
        return await sharedDownload().result
    }

    /// The shortest time between two downloads triggered by refusals (seconds): an impostor
    /// (or a flood of connections to unpinned hosts) causes at most one list download a minute.
    package static let refusalUpdateInterval: TimeInterval = 60

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
    private func makeDownloadTask() -> Task<UpdateReport, Never> {
        Task { [self] in
            let report = await self.downloadAndApply()
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
        do {
            let verified = try await download()
            try apply(verified)
            logger.info("fingerprint list updated", metadata: ["entries": "\(verified.entries.count)", "identifier": "\(configuration.identifier)"])
            return UpdateReport(result: .ok, error: nil)
        } catch {
            logger.warning("fingerprint list update failed", metadata: ["reason": "\(error)", "identifier": "\(configuration.identifier)"])
            return UpdateReport(result: error.updateResult, error: error)
        }
    }

    private func download() async throws(PinStoreError) -> VerifiedList {
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
                                      nextUpdate: 0)
        return try verify(persisted)
    }

    /// Verifies signed material, from the network or from the store file.
    func verify(_ persisted: PersistedList) throws(PinStoreError) -> VerifiedList {
        switch persisted.mode {
        case .static:
            let document = try FingerprintListDocument(body: persisted.body)
            let entries = try verifier.verifyStatic(document)
            // Only a whole-list signature covers a static body's `timestamp`; without one it
            // must not become a rollback floor (a forged huge value would refuse every later list).
            let signedTimestamp = try verifier.verifyWholeList(body: persisted.body, document: document,
                                                               required: configuration.requireListSignature)
            return VerifiedList(persisted: persisted, entries: entries, timestamp: signedTimestamp)
        case .challenge:
            // The signature covers the body: check it before parsing anything.
            try verifier.verifyChallenge(body: persisted.body, challenge: persisted.challenge ?? "", signatureHeader: persisted.signature)
            let document = try FingerprintListDocument(body: persisted.body)
            return VerifiedList(persisted: persisted, entries: document.entries.map(\.entry), timestamp: document.timestamp)
        }
    }

    private func apply(_ verified: VerifiedList) throws(PinStoreError) {
        let now = clock.now()
        let current = state.withLock { $0.stored }
        if let newTimestamp = verified.timestamp, let storedTimestamp = current?.timestamp, newTimestamp < storedTimestamp {
            throw PinStoreError(.invalidListData, "The list's timestamp \(newTimestamp) is older than the stored list's \(storedTimestamp); refusing a rollback.")
        }
        let valid = verified.entries.filter { $0.isValid(at: now) }
        guard !valid.isEmpty else {
            throw PinStoreError(.noValidEntries, verified.entries.isEmpty
                ? "The verified list has no entries; the stored pins are kept."
                : "Every entry of the verified list has expired; the stored pins are kept.")
        }
        let next = UpdateSchedule.nextUpdate(for: valid, now: now,
                                             periodicInterval: configuration.periodicUpdateInterval,
                                             expirationThreshold: configuration.expirationUpdateThreshold)
        var persisted = verified.persisted
        persisted.nextUpdate = next.timeIntervalSince1970
        do {
            try file.save(persisted)
        } catch {
            // The verified list is still good for this process; only persistence failed.
            logger.error("could not save the fingerprint list", metadata: ["reason": "\(error)"])
        }
        let fresh = VerifiedList(persisted: persisted, entries: valid, timestamp: verified.timestamp)
        let index = PinIndex(entries: valid + fallbackEntries)
        state.withLock { state in
            state.stored = fresh
            state.index = index
            state.schedule.listApplied(nextUpdate: next)
            state.generation &+= 1
        }
        notifyListChanged()
    }

    private func loadPersistedList() {
        do {
            guard let persisted = try file.load(logger: logger) else { return }
            let verified = try verify(persisted)
            let now = clock.now()
            let valid = verified.entries.filter { $0.isValid(at: now) }
            let index = PinIndex(entries: valid + fallbackEntries)
            state.withLock { state in
                state.stored = VerifiedList(persisted: persisted, entries: valid, timestamp: verified.timestamp)
                state.index = index
                state.schedule.listApplied(nextUpdate: Date(timeIntervalSince1970: persisted.nextUpdate))
            }
        } catch {
            logger.warning("ignoring the stored fingerprint list", metadata: ["reason": "\(error)", "file": "\(file.url.path)"])
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
        case .invalidListSignature: .invalidSignature
        case .noValidEntries: .storeIsEmpty
        case .network: .networkError
        default: .invalidData
        }
    }
}
