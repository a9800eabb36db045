import CoreMetrics
import Foundation
import Logging

/// A store's CRL check: which mode a host is in, the CRLs its validated chains need (fetched,
/// verified, kept in memory and in the storage folder until their `nextUpdate`), the verdicts
/// and the metrics.
///
/// The rules are synchronous, so the check has two halves: before a chain-aware adapter decides,
/// ``preparation(host:chain:list:)`` gives it the fetch to wait for (bounded by
/// ``budget``), and the rule (``CRLRevocationRule``) then reads only what is cached. A CRL that
/// is missing, late or untrustworthy answers "unavailable", never "not revoked".
///
/// Whoever issued a validated chain chooses its distribution points, so what they can make the
/// client fetch is bounded here: at most ``CRLSubject/maximumDistributionPoints`` read per
/// certificate, at most ``maximumConcurrentFetches`` downloads of the store at once
/// (``CRLFetchLimiter``), at most ``maximumPendingFetches`` distribution points being fetched or
/// waiting for a turn, each download within ``timeout`` however its server paces the answer
/// (``FingerprintListFetcher/fetchWithinDeadline(_:)``) and redirected only within its origin
/// (``DownloadRedirectRule``); and a handshake waits for them at most ``budget``, on a timer
/// outside the cooperative pool (``TotalDeadline``).
final class CRLChecker: Sendable {
    /// The mode of hosts the signed list does not name.
    let defaultMode: CRLCheckMode
    /// The longest a handshake waits for missing CRLs (seconds).
    let budget: TimeInterval
    /// The largest CRL read (bytes).
    let maximumSize: Int
    /// Where CRLs are kept for other processes sharing the folder (nil: memory only).
    let directory: URL?
    private let fetcher: any FingerprintListFetcher
    private let clock: any PinStoreClock
    private let logger: Logger
    let metrics: Metrics

    /// What is known per distribution point URL.
    private let entries = Locked<[String: Entry]>([:])
    /// The download under way (or waiting for its turn) per URL, shared by every handshake
    /// that needs it.
    private let inFlight = Locked<[String: Task<Void, Never>]>([:])
    /// The turns of this store's downloads.
    let limiter = CRLFetchLimiter(limit: CRLChecker.maximumConcurrentFetches)

    /// A failed fetch is not tried again for this long (seconds): a CRL server that is down
    /// would otherwise make every handshake wait the whole budget.
    static let retryInterval: Int64 = 60
    /// A CRL is fetched again this long before its `nextUpdate` (seconds), or at half its
    /// lifetime when that is shorter.
    static let refreshMargin: Int64 = 3_600
    /// At most this many distribution points are remembered.
    static let entryLimit = 1_024
    /// CRL downloads of one store at once. A store needs the CRLs of a handful of CAs, each
    /// kept until its `nextUpdate` (days), so four at once is never the bottleneck of an honest
    /// deployment; a hostile chain's distribution points get four connections, not a thousand.
    static let maximumConcurrentFetches = 4
    /// Distribution points of one store being fetched or waiting for a turn. One handshake with
    /// a chain of ten certificates, each at the per-certificate cap, fits; past this a point is
    /// not fetched for that handshake (its CRL answers "not fetched yet", and a later handshake
    /// asks again), so what waits cannot grow with the handshakes a hostile peer makes.
    static let maximumPendingFetches = 64

    struct Entry: Sendable {
        /// The verified CRL, when one was had.
        var crl: CertificateRevocationList?
        /// Why the last attempt gave no CRL (nil after a good one).
        var failure: CRLUnavailable?
        /// When the last attempt ended (Unix seconds).
        var attemptedAt: Int64
        /// The issuer the CRL is verified with (DER, from the chain that needed it).
        var issuer: Data
        var issuerKey: Digest32
        /// When a check last read it (Unix seconds; when it was first cached until then). A CRL
        /// unused for ``idleLimit`` is no longer refreshed (``sweep(now:)``).
        var lastUsed: Int64

        init(crl: CertificateRevocationList?, failure: CRLUnavailable?, attemptedAt: Int64, issuer: Data, issuerKey: Digest32) {
            self.crl = crl
            self.failure = failure
            self.attemptedAt = attemptedAt
            self.issuer = issuer
            self.issuerKey = issuerKey
            lastUsed = attemptedAt
        }
    }

    init(defaultMode: CRLCheckMode, budget: TimeInterval = 2, maximumSize: Int = 8 << 20, timeout: TimeInterval = 10,
         directory: URL? = nil, fetcher: any FingerprintListFetcher = URLSessionListFetcher(), clock: any PinStoreClock = SystemClock(),
         logger: Logger = Logger(label: "PinStore", factory: { _ in SwiftLogNoOpLogHandler() }),
         identifier: String = "default", metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.defaultMode = defaultMode
        self.budget = budget
        self.maximumSize = maximumSize
        self.timeout = timeout
        self.directory = directory
        self.fetcher = fetcher
        self.clock = clock
        self.logger = logger
        metrics = Metrics(identifier: identifier, factory: metricsFactory)
    }

    /// The download timeout (seconds): a fetch that outlives the budget goes on in the
    /// background up to this, so the next handshake finds the CRL.
    let timeout: TimeInterval

    /// The mode for `host`: the signed list's most specific entry, else the configuration's.
    func mode(for host: HostName, list: CRLHostList?) -> CRLCheckMode {
        list?.mode(for: host.text) ?? defaultMode
    }

    /// False when no host can be under a CRL check: stores without one pay one compare.
    func mayApply(list: CRLHostList?) -> Bool {
        list != nil || defaultMode != .off
    }

    /// The exact names the list's `crl` section names.
    func singledOutHosts(_ list: CRLHostList?, into names: inout Set<String>) {
        for (pattern, _) in list?.hosts ?? [] { names.insert(pattern.base) }
    }

    // MARK: - The rule's half (synchronous, cached state only)

    /// The CRL part of the pin rules for one connection.
    func check(_ connection: PinningContext) -> PinningRuleResult {
        let list = connection.crl
        guard mayApply(list: list) else { return .meetsRule }
        let mode = mode(for: connection.host, list: list)
        guard mode != .off else { return .meetsRule }
        guard case .validated(let chain) = connection.evidence else {
            // AsyncHTTPClient's leaf view: no issuer, so no CRL can be verified. Refused (or
            // reported under report-only), never skipped.
            metrics.record(.unavailable)
            let why = CRLUnavailable(.needsValidatedChain, url: "",
                                     "this adapter sees only the leaf; a CRL is verified with the issuer's key from the validated chain")
            return Self.leafViewResult(.unavailable(depth: 0, why), mode: mode)
        }
        switch verdict(chain: chain, now: connection.now) {
        case .good:
            metrics.record(.good)
            return .meetsRule
        case .skipped:
            metrics.record(.skipped)
            return .meetsRule
        case .revoked(let failure):
            metrics.record(.revoked)
            return Self.result(failure, mode: mode)
        case .unavailable(let failure):
            metrics.record(.unavailable)
            return Self.result(failure, mode: mode)
        }
    }

    enum Verdict: Sendable, Equatable {
        /// Every certificate with a distribution point has a current CRL that does not list it.
        case good
        /// No certificate of the chain names an http distribution point.
        case skipped
        case revoked(CRLCheckFailure)
        case unavailable(CRLCheckFailure)
    }

    /// The verdict for `chain` from the cached CRLs. A revoked certificate anywhere wins over
    /// a missing CRL elsewhere. The last certificate (the anchor) is not checked: it is trusted
    /// by configuration, and nothing above it signs a CRL for it.
    func verdict(chain: ValidatedChain, now: Int64) -> Verdict {
        var unavailable: CRLCheckFailure?
        var checked = false
        for depth in 0..<max(0, chain.count - 1) {
            guard let subject = CRLSubject.of(chain.certificates[depth], fingerprint: chain.fingerprints[depth]) else {
                unavailable = unavailable ?? .unavailable(depth: depth, CRLUnavailable(.malformed, url: "", "the certificate could not be read"))
                continue
            }
            guard !subject.urls.isEmpty else { continue }
            checked = true
            switch status(of: subject, issuer: chain.certificates[depth + 1], issuerKey: chain.keys[depth + 1], now: now) {
            case .success(nil):
                continue
            case .success(let revokedAt?):
                return .revoked(.revoked(depth: depth, at: Date(timeIntervalSince1970: TimeInterval(revokedAt))))
            case .failure(let why):
                unavailable = unavailable ?? .unavailable(depth: depth, why)
            }
        }
        if let unavailable { return .unavailable(unavailable) }
        return checked ? .good : .skipped
    }

    /// The revocation date of `subject` (nil: not revoked) by the first of its distribution
    /// points with a usable CRL, or why none was usable.
    private func status(of subject: CRLSubject, issuer: Data, issuerKey: Digest32, now: Int64) -> Result<Int64?, CRLUnavailable> {
        var failure: CRLUnavailable?
        for url in subject.urls {
            let key = url.absoluteString
            let read = entries.withLock { entries -> Entry? in
                if let used = entries[key]?.lastUsed, used < now { entries[key]?.lastUsed = now }
                return entries[key]
            }
            guard let entry = read else {
                failure = failure ?? CRLUnavailable(.notFetchedYet, url: key, "the CRL has not been fetched (within the budget)")
                continue
            }
            guard var crl = entry.crl else {
                failure = failure ?? entry.failure ?? CRLUnavailable(.notFetchedYet, url: key, "no CRL")
                continue
            }
            if !crl.issuerKey.constantTimeEquals(issuerKey) {
                // The same URL named under another issuer: this CRL must be verified for it too
                // (a CA cannot vouch for another's certificates).
                do {
                    crl = try CertificateRevocationList(der: crl.der, url: key, issuer: issuer, issuerKey: issuerKey, now: now)
                } catch {
                    failure = failure ?? error
                    continue
                }
            }
            guard crl.nextUpdate > now else {
                failure = failure ?? CRLUnavailable(.expired, url: key, "the cached CRL's nextUpdate \(crl.nextUpdate) has passed and no newer one was had")
                continue
            }
            switch crl.covers {
            case .endEntitiesOnly where subject.isAuthority, .authoritiesOnly where !subject.isAuthority:
                failure = failure ?? CRLUnavailable(.outOfScope, url: key, "the CRL covers \(subject.isAuthority ? "end-entity" : "CA") certificates only")
                continue
            default:
                break
            }
            metrics.crlAge.record(max(0, now - crl.thisUpdate))
            return .success(crl.revoked[subject.serial])
        }
        return .failure(failure ?? CRLUnavailable(.notFetchedYet, url: "", "no distribution point"))
    }

    static func result(_ failure: CRLCheckFailure, mode: CRLCheckMode) -> PinningRuleResult {
        let reason = PinningFailure.Reason.crlCheckFailed(failure)
        switch mode {
        case .off: return .meetsRule
        case .reportOnly: return .reportsOnly(reason)
        case .enforceSoftFail: return failure.isRevoked ? .failsRule(reason, enforcing: true, relaxable: false) : .reportsOnly(reason)
        case .enforceHardFail: return .failsRule(reason, enforcing: true, relaxable: false)
        }
    }

    /// The leaf view cannot check at all: refused unless the host only reports.
    static func leafViewResult(_ failure: CRLCheckFailure, mode: CRLCheckMode) -> PinningRuleResult {
        mode == .reportOnly ? .reportsOnly(.crlCheckFailed(failure)) : .failsRule(.crlCheckFailed(failure), enforcing: true, relaxable: false)
    }

    // MARK: - The adapter's half (asynchronous, before the decision)

    /// What must be fetched before `chain` can be decided for `host`: nil when nothing (off, or
    /// every CRL cached and current, or a fetch failed less than ``retryInterval`` ago).
    func preparation(host: HostName, chain: ValidatedChain, list: CRLHostList?) -> (@Sendable () async -> Void)? {
        guard mayApply(list: list), mode(for: host, list: list) != .off else { return nil }
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        var needed: [(url: URL, issuer: Data, issuerKey: Digest32)] = []
        for depth in 0..<max(0, chain.count - 1) {
            guard let subject = CRLSubject.of(chain.certificates[depth], fingerprint: chain.fingerprints[depth]) else { continue }
            for url in subject.urls where needsFetch(url.absoluteString, now: now) {
                needed.append((url, chain.certificates[depth + 1], chain.keys[depth + 1]))
            }
        }
        guard !needed.isEmpty else { return nil }
        return { [self, needed] in
            let tasks = needed.compactMap { fetchTask(url: $0.url, issuer: $0.issuer, issuerKey: $0.issuerKey) }
            if tasks.count < needed.count {
                logger.debug("CRL fetches deferred: the store's queue is full", metadata: [
                    "pinstore.crl.deferred": "\(needed.count - tasks.count)", "pinstore.crl.pendingLimit": "\(Self.maximumPendingFetches)",
                ])
            }
            guard !tasks.isEmpty else { return }
            // The downloads go on past the budget, so the next handshake finds their CRLs.
            _ = await TotalDeadline.wait(atMost: budget) { for task in tasks { await task.value } }
        }
    }

    /// The distribution points being fetched or waiting for a turn now.
    var pendingFetchCount: Int {
        inFlight.withLock { $0.count }
    }

    /// Whether `url` has no current CRL and no recent failed attempt.
    private func needsFetch(_ url: String, now: Int64) -> Bool {
        guard let entry = entries.withLock({ $0[url] }) else { return true }
        if let crl = entry.crl, crl.nextUpdate > now { return false }
        return now - entry.attemptedAt >= Self.retryInterval || now < entry.attemptedAt
    }

    /// The download of `url` under way, or a new one (the storage folder first, then the
    /// network); nil when ``maximumPendingFetches`` are under way or waiting already.
    private func fetchTask(url: URL, issuer: Data, issuerKey: Digest32) -> Task<Void, Never>? {
        let key = url.absoluteString
        return inFlight.withLock { tasks in
            if let running = tasks[key] { return running }
            guard tasks.count < Self.maximumPendingFetches else { return nil }
            let task = Task { [self] in
                await load(url: url, issuer: issuer, issuerKey: issuerKey)
                _ = inFlight.withLock { $0.removeValue(forKey: key) }
            }
            tasks[key] = task
            return task
        }
    }

    /// Takes the CRL for `url` from the storage folder when a current one is there (another
    /// process fetched it), else downloads it; verifies it for `issuer` and keeps it.
    func load(url: URL, issuer: Data, issuerKey: Digest32, forceDownload: Bool = false) async {
        let key = url.absoluteString
        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        if !forceDownload, let der = readStored(key),
           let crl = try? CertificateRevocationList(der: der, url: key, issuer: issuer, issuerKey: issuerKey, now: now),
           !Self.isDueForRefresh(crl, now: now) {
            store(key, Entry(crl: crl, failure: nil, attemptedAt: now, issuer: issuer, issuerKey: issuerKey))
            return
        }
        var request = FingerprintListRequest(url: url, timeout: timeout, maximumBodySize: maximumSize, document: "CRL")
        request.allowsPlainHTTP = true
        request.redirectsStayOnOrigin = true
        let fetcher = self.fetcher, metrics = self.metrics
        let fetched = await limiter.withTurn { () async -> Result<FingerprintListResponse, PinStoreError> in
            metrics.fetches.increment()
            do throws(PinStoreError) {
                return .success(try await fetcher.fetchWithinDeadline(request))
            } catch {
                return .failure(error)
            }
        }
        // Cancelled while waiting for a turn (PinStore.run() ending): nothing was attempted.
        guard let fetched else { return }
        let outcome: Result<CertificateRevocationList, CRLUnavailable>
        do throws(PinStoreError) {
            let response = try fetched.get()
            let done = Int64(clock.now().timeIntervalSince1970.rounded(.down))
            if response.statusCode != 200 {
                outcome = .failure(CRLUnavailable(.fetchFailed, url: key, "the server answered HTTP \(response.statusCode)"))
            } else {
                metrics.fetchedBytes.record(response.body.count)
                outcome = Result { () throws(CRLUnavailable) in
                    try CertificateRevocationList(der: response.body, url: key, issuer: issuer, issuerKey: issuerKey, now: done)
                }
            }
        } catch {
            let code: CRLUnavailable.Code
            switch error.code {
            case .deadlineExceeded: code = .deadlineExceeded
            case .invalidListData where error.reason.contains("limit"): code = .tooLarge
            default: code = .fetchFailed
            }
            outcome = .failure(CRLUnavailable(code, url: key, error.reason))
        }
        let done = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        switch outcome {
        case .success(let crl):
            store(key, Entry(crl: crl, failure: nil, attemptedAt: done, issuer: issuer, issuerKey: issuerKey))
            writeStored(key, crl.der)
        case .failure(let why):
            metrics.fetchFailures.increment()
            logger.debug("CRL unavailable", metadata: ["pinstore.crl.url": "\(key)", "pinstore.crl.reason": "\(why)"])
            // A CRL still current is kept: a failed refresh does not throw away a good answer.
            entries.withLock { entries in
                var entry = entries[key] ?? Entry(crl: nil, failure: nil, attemptedAt: done, issuer: issuer, issuerKey: issuerKey)
                entry.failure = why
                entry.attemptedAt = done
                if let crl = entry.crl, crl.nextUpdate <= done { entry.crl = nil }
                entries[key] = entry
            }
        }
    }

    /// Verifies `der` for `issuer` and keeps it for `url`, as a download would (benchmarks, and
    /// callers that have the CRL already).
    func install(url: String, der: Data, issuer: Data, issuerKey: Digest32, now: Int64) throws(CRLUnavailable) {
        let crl = try CertificateRevocationList(der: der, url: url, issuer: issuer, issuerKey: issuerKey, now: now)
        store(url, Entry(crl: crl, failure: nil, attemptedAt: now, issuer: issuer, issuerKey: issuerKey))
    }

    private func store(_ key: String, _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= Self.entryLimit, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            var entry = entry
            // A refresh is not a use: otherwise run() would keep every CRL ever needed current forever.
            if let previous = entries[key] { entry.lastUsed = previous.lastUsed }
            entries[key] = entry
        }
        cached.signal()
    }

    /// Signalled whenever a CRL is cached: the refresh loop of a store that holds none waits for
    /// it instead of waking on the clock.
    let cached = CRLCacheSignal()

    /// Whether `crl` should be fetched again: within ``refreshMargin`` (or half its lifetime)
    /// of its `nextUpdate`.
    static func isDueForRefresh(_ crl: CertificateRevocationList, now: Int64) -> Bool {
        now >= refreshAt(crl)
    }

    static func refreshAt(_ crl: CertificateRevocationList) -> Int64 {
        crl.nextUpdate - min(refreshMargin, max(0, (crl.nextUpdate - crl.thisUpdate) / 2))
    }

    // MARK: - Background refresh (driven by PinStore.run())

    /// The CRLs to fetch again now, and when to look next (``CRLRefreshSchedule``).
    func refreshPlan(now: Int64) -> CRLRefreshSchedule.Plan {
        let snapshot = entries.withLock { $0 }
        return CRLRefreshSchedule.plan(snapshot.map { key, entry in
            CRLRefreshSchedule.Item(url: key, refreshAt: entry.crl.map(Self.refreshAt), lastAttempt: entry.attemptedAt)
        }, now: now, retryInterval: Self.retryInterval)
    }

    /// Fetches every CRL the plan names (one after the other: a handful of CAs).
    func refresh(_ urls: [String]) async {
        for key in urls {
            guard let entry = entries.withLock({ $0[key] }), let url = URL(string: key) else { continue }
            await load(url: url, issuer: entry.issuer, issuerKey: entry.issuerKey, forceDownload: true)
        }
    }

    // MARK: - The storage folder

    /// `<directory>/pinstore-crl-<SHA-256 of the URL, hex>.der`: the CRL as served. It is signed
    /// by its CA and verified again on every read, so the file needs no signature of its own;
    /// one another user owns, or that others may write, is refused (``PersistentListFile``).
    func fileURL(for key: String) -> URL? {
        let digest = SHA256Digest.hash(Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        return directory?.appendingPathComponent("pinstore-crl-\(digest).der")
    }

    private func readStored(_ key: String) -> Data? {
        guard let url = fileURL(for: key) else { return nil }
        do {
            return try PersistentListFile(url: url, maximumSize: maximumSize).readBytes()
        } catch {
            logger.debug("stored CRL refused", metadata: ["pinstore.crl.file": "\(url.path)", "pinstore.reason": "\(error)"])
            return nil
        }
    }

    private func writeStored(_ key: String, _ der: Data) {
        guard let url = fileURL(for: key) else { return }
        do {
            try PersistentListFile.writeAtomically(der, to: url)
        } catch {
            logger.debug("CRL not saved", metadata: ["pinstore.crl.file": "\(url.path)", "pinstore.reason": "\(error)"])
        }
    }

    // MARK: - Sweeping (driven by PinStore.run())

    /// A CRL no check has read for this long (seconds) is forgotten, so it is no longer
    /// refreshed: its stored file then ages until ``pruneGrace`` past its `nextUpdate`.
    static let idleLimit: Int64 = 7 * 86_400
    /// A stored CRL is deleted no sooner than this long (seconds) after its `nextUpdate`. Past
    /// `nextUpdate` no process can use it (a CRL is refused once expired); the day covers the
    /// clock skew between workers and a refresh under way in one of them.
    static let pruneGrace: Int64 = 86_400
    /// How often ``PinStore/run()`` sweeps (seconds).
    static let sweepInterval: Int64 = 3_600

    /// `pinstore-crl-<64 lowercase hex>.der`, the only names ``fileURL(for:)`` makes.
    static func isStoredCRLName(_ name: String) -> Bool {
        let prefix = "pinstore-crl-", suffix = ".der"
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return false }
        let digest = name.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count)
        return digest.count == 64 && digest.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// Forgets the CRLs no check read for ``idleLimit``, then deletes the storage folder's CRL
    /// files that no process can use any more: the names ``fileURL(for:)`` makes, regular
    /// files (never a symbolic link) of this process's user, holding a CRL whose `nextUpdate`
    /// passed more than ``pruneGrace`` ago and that this store does not hold. Workers share
    /// the folder, so nothing current is deleted (another worker may read it), and a file
    /// another worker replaced while it was read is left (``PersistentListFile/removeFile(atPath:ifStill:)``).
    /// A file that cannot be read as a CRL is left too: it is not known to be ours.
    ///
    /// - Returns: the names of the files deleted.
    @discardableResult
    func sweep(now: Int64) -> [String] {
        let kept = entries.withLock { entries -> Set<String> in
            entries = entries.filter { now - $0.value.lastUsed < Self.idleLimit }
            return Set(entries.keys.compactMap { fileURL(for: $0)?.lastPathComponent })
        }
        guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var deleted: [String] = []
        for name in names.sorted() where Self.isStoredCRLName(name) && !kept.contains(name) {
            let path = directory.appendingPathComponent(name).path
            guard let status = FileStatus(path: path, followingSymlinks: false), status.isRegularFile,
                  status.owner == FileStatus.effectiveUser,
                  let der = try? RegularFileReader.contents(ofFileAt: path, followingSymlinks: false, maximumSize: maximumSize).0,
                  let nextUpdate = CertificateRevocationList.nextUpdateUnverified(der),
                  nextUpdate + Self.pruneGrace < now else { continue }
            if PersistentListFile.removeFile(atPath: path, ifStill: status) {
                deleted.append(name)
            }
        }
        if !deleted.isEmpty {
            logger.debug("old CRL files deleted", metadata: ["pinstore.crl.deleted": "\(deleted.count)"])
        }
        return deleted
    }

    /// What the status command and tests read: the cached state of `url`.
    func entry(for url: String) -> Entry? {
        entries.withLock { $0[url] }
    }

    // MARK: - Metrics

    /// What one CRL check ended in: the `outcome` of `pinstore_crl_checks_total`.
    enum Outcome: String, CaseIterable {
        case good, revoked, unavailable, skipped
    }

    /// `pinstore_crl_checks_total{outcome}`, `pinstore_crl_fetches_total`,
    /// `pinstore_crl_fetch_failures_total`, `pinstore_crl_fetched_bytes` and
    /// `pinstore_crl_age_seconds` (the age of the CRL a check last read, from its `thisUpdate`).
    struct Metrics: Sendable {
        static let checksLabel = "pinstore_crl_checks_total"
        private let checks: [String: Counter]
        let fetches: Counter
        let fetchFailures: Counter
        let fetchedBytes: Recorder
        let crlAge: Gauge

        init(identifier: String, factory: any MetricsFactory) {
            let store = ("store", identifier)
            checks = Dictionary(uniqueKeysWithValues: Outcome.allCases.map {
                ($0.rawValue, Counter(label: Self.checksLabel, dimensions: [store, ("outcome", $0.rawValue)], factory: factory))
            })
            fetches = Counter(label: "pinstore_crl_fetches_total", dimensions: [store], factory: factory)
            fetchFailures = Counter(label: "pinstore_crl_fetch_failures_total", dimensions: [store], factory: factory)
            fetchedBytes = Recorder(label: "pinstore_crl_fetched_bytes", dimensions: [store], factory: factory)
            crlAge = Gauge(label: "pinstore_crl_age_seconds", dimensions: [store], factory: factory)
        }

        func record(_ outcome: Outcome) { checks[outcome.rawValue]?.increment() }
    }
}

/// Wakes whoever waits (``PinStore/run()``'s CRL refresh loop) when a CRL is cached. Any number
/// of waiters; a cancelled wait returns at once.
final class CRLCacheSignal: Sendable {
    private let waiters = Locked<(next: Int, continuations: [Int: CheckedContinuation<Void, Never>])>((0, [:]))

    /// Returns at the next ``signal()``, or when the task is cancelled.
    func wait() async {
        let id = waiters.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.continuations[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.continuations.removeValue(forKey: id) }?.resume()
        }
    }

    /// Wakes every waiter.
    func signal() {
        let woken = waiters.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in woken { continuation.resume() }
    }
}
