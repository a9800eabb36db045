import Foundation

/// One pinning decision an adapter made with a store: which host, what was decided, when.
public struct PinningEvent: Sendable, CustomStringConvertible {
    /// The host name (or IP address) the client connected to.
    public let host: String
    /// What the adapter decided.
    public let decision: PinningDecision
    /// When the decision was made.
    public let date: Date
    /// False for a pin failure that report-only mode let through
    /// (``PinningDecision/reportOnly(_:validatedChain:)``): the connection went on. True for every
    /// other decision, allowed or denied.
    public let enforced: Bool
    /// Whether the signed list in force was past its own `expires` when the decision was made
    /// (see ``PinStore/ExpiredListPolicy``): the decision rests on a list that is no longer
    /// fresh, or, with ``PinStore/ExpiredListPolicy/refusePins``, without its pins.
    public let listExpired: Bool
    /// Whether the host asks for Certificate Transparency and the check failed open: the
    /// signed list in force carries no log list, or one older than 70 days
    /// (<doc:CertificateTransparency>). The decision was made without CT.
    public let certificateTransparencyFailedOpen: Bool

    /// The pin failure behind the decision, enforced (a denial) or not (report-only); nil when
    /// the connection was allowed by its pins.
    public var failure: PinningFailure? {
        decision.failure ?? decision.reportedFailure
    }

    /// Creates an event; ``enforced`` follows from `decision`.
    public init(host: String, decision: PinningDecision, date: Date, listExpired: Bool = false,
                certificateTransparencyFailedOpen: Bool = false) {
        self.host = host
        self.decision = decision
        self.date = date
        self.enforced = decision.reportedFailure == nil
        self.listExpired = listExpired
        self.certificateTransparencyFailedOpen = certificateTransparencyFailedOpen
    }

    /// One line, for line-based log shipping: the host and the decision (a failure's summary,
    /// without its multi-line details), and whether the signed list in force had expired.
    public var description: String {
        "\(host): \(decision)".replacingOccurrences(of: "\n", with: " ")
            + (listExpired ? " (the signed list in force has expired)" : "")
            + (certificateTransparencyFailedOpen ? " (Certificate Transparency failed open: no fresh log list)" : "")
    }
}

/// The subscribers of a store: decision streams and list-change handlers.
struct PinStoreObservers: Sendable {
    var decisionContinuations: [UInt64: AsyncStream<PinningEvent>.Continuation] = [:]
    var updateContinuations: [UInt64: AsyncStream<PinStore.UpdateReport>.Continuation] = [:]
    var listChangeHandlers: [UInt64: @Sendable () -> Void] = [:]
    var listChangeSettlers: [UInt64: @Sendable () async -> Void] = [:]
    var nextToken: UInt64 = 0

    mutating func token() -> UInt64 {
        nextToken &+= 1
        return nextToken
    }
}

extension PinStore {
    /// Every final pinning decision the adapters make with this store, as they are made, once
    /// each: log them, alert on refusals, count them.
    ///
    /// ```swift
    /// Task {
    ///     for await event in store.decisions() where !event.decision.isAllowed {
    ///         logger.notice("pinning refused \(event.host)", metadata: ["reason": "\(event.decision)"])
    ///     }
    /// }
    /// ```
    ///
    /// Each call makes an independent stream. A slow reader loses the oldest events beyond
    /// `limit` rather than slowing connections down. The stream ends when its task is cancelled
    /// or the store goes away.
    public func decisions(bufferingNewest limit: Int = 256) -> AsyncStream<PinningEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PinningEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let token = observers.withLock { observers in
            let token = observers.token()
            observers.decisionContinuations[token] = continuation
            return token
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.decisionContinuations.removeValue(forKey: token) }
        }
        return stream
    }

    /// Adapters report each final decision here: it reaches ``decisions(bufferingNewest:)``,
    /// the metrics and, for a pin failure, the report URI. `port`, `servedChain` (the
    /// certificates the server presented) and `validatedChain` (nil when the normal trust
    /// evaluation refused) are for the report.
    package func record(_ decision: PinningDecision, host: String, port: Int? = nil,
                        servedChain: [Data] = [], validatedChain: [Data]? = nil) {
        let now = clock.now()
        let listExpired = listIsExpired(at: now)
        if listExpired { noteListExpiry(at: now) }
        let event = PinningEvent(host: host, decision: decision, date: now, listExpired: listExpired,
                                 certificateTransparencyFailedOpen: certificateTransparencyFailsOpen(for: host, at: now))
        let continuations = observers.withLock { Array($0.decisionContinuations.values) }
        for continuation in continuations { continuation.yield(event) }
        metrics.record(decision, host: metricsHost(host))
        logReportOnly(decision, host: host)
        reportPinFailure(decision, host: host, port: port, servedChain: servedChain,
                         validatedChain: validatedChain ?? decision.validatedChain, enforced: event.enforced, at: event.date)
    }

    /// Whether a decision for `host` at `now` was made with CT failing open (see
    /// ``PinningEvent/certificateTransparencyFailedOpen``).
    func certificateTransparencyFailsOpen(for host: String, at now: Date) -> Bool {
        let list = state.withLock { $0.list.certificateTransparency }
        guard certificateTransparency.mayApply(list: list), let name = try? HostName(host) else { return false }
        return certificateTransparency.mode(for: name, list: list) != .off
            && certificateTransparency.failsOpen(list: list, now: Int64(now.timeIntervalSince1970.rounded(.down)))
    }

    /// The `host` dimension of `pinstore_decisions_total` for a connection to `host`: the name
    /// itself when the configuration or the list pins or expects it by that name, the pattern
    /// when only a wildcard (a list's `*.` entry, a policy's `*.`/`**.` or subdomains) covers
    /// it, and `other` for everything else, so a hostile or unbounded set of hosts cannot grow
    /// the label set beyond what the configuration and the lists name.
    func metricsHost(_ host: String) -> String {
        guard let key = (try? HostName(host))?.text else { return "other" }
        let list = state.withLock { $0.list.index }
        for index in [list, fallbackIndex].compactMap({ $0 }) where index.exact[key] != nil { return key }
        if expectedNames?.contains(key) == true { return key }
        if let policy = staticPins.mostSpecificPolicy(for: key) {
            return policy.pattern.kind == .exact || policy.pattern.kind == .address ? key : policy.policy.domain.lowercased()
        }
        if let dot = key.firstIndex(of: "."), dot != key.startIndex {
            let parent = String(key[key.index(after: dot)...])
            for index in [list, fallbackIndex].compactMap({ $0 }) where index.wildcard[parent] != nil { return "*." + parent }
        }
        return "other"
    }

    /// Registers `handler`, called after every change of the list in force (an update applied,
    /// a newer list adopted from the store file). Adapters use it to drop pooled or cached
    /// trust that the new list no longer grants. Returns a token for
    /// ``removeListChangeHandler(_:)``.
    ///
    /// `handler` runs where the list changed (a download task, an event loop, a caller's
    /// thread) and must not block. Work it starts and cannot finish there (closing connections)
    /// is awaited by `settled`, which ``update(mode:)`` and ``updateWithReport(mode:)`` await
    /// before they return: a request made after them does not meet what the new list refused.
    package func addListChangeHandler(_ handler: @escaping @Sendable () -> Void,
                                      settled: (@Sendable () async -> Void)? = nil) -> UInt64 {
        observers.withLock { observers in
            let token = observers.token()
            observers.listChangeHandlers[token] = handler
            observers.listChangeSettlers[token] = settled
            return token
        }
    }

    /// Unregisters a handler added with ``addListChangeHandler(_:settled:)``.
    package func removeListChangeHandler(_ token: UInt64) {
        observers.withLock {
            $0.listChangeHandlers.removeValue(forKey: token)
            $0.listChangeSettlers.removeValue(forKey: token)
        }
    }

    /// Awaits what the list-change handlers started (without blocking a thread).
    func settleListChanges() async {
        let settlers = observers.withLock { Array($0.listChangeSettlers.values) }
        for settled in settlers { await settled() }
    }

    /// Ends every decision stream (from the store's `deinit`).
    func finishDecisionStreams() {
        let (decisions, updates) = observers.withLock { observers in
            defer {
                observers.decisionContinuations.removeAll()
                observers.updateContinuations.removeAll()
            }
            return (Array(observers.decisionContinuations.values), Array(observers.updateContinuations.values))
        }
        for continuation in decisions { continuation.finish() }
        for continuation in updates { continuation.finish() }
    }

    /// The report of every list update that ran (a download or file read, or the adoption of
    /// another process's list), as each ends, whatever started it: ``run()``'s schedule, a
    /// refusal, a changed list file, or ``update(mode:)``. Updates that did nothing because
    /// nothing was due are not reported.
    ///
    /// ```swift
    /// // A test that publishes a list and waits for the store to take it, without sleeping:
    /// let updates = store.updates()
    /// try server.publish(nextList)
    /// for await report in updates where report.result == .ok { break }
    /// ```
    ///
    /// Each call makes an independent stream that sees the updates that end after the call. A
    /// slow reader loses the oldest reports beyond `limit`. The stream ends when its task is
    /// cancelled or the store goes away.
    public func updates(bufferingNewest limit: Int = 16) -> AsyncStream<UpdateReport> {
        let (stream, continuation) = AsyncStream.makeStream(of: UpdateReport.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let token = observers.withLock { observers in
            let token = observers.token()
            observers.updateContinuations[token] = continuation
            return token
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.updateContinuations.removeValue(forKey: token) }
        }
        return stream
    }

    /// The updater reports each update that ran here (see ``updates(bufferingNewest:)``).
    func updateFinished(_ report: UpdateReport) {
        let continuations = observers.withLock { Array($0.updateContinuations.values) }
        for continuation in continuations { continuation.yield(report) }
    }

    /// Calls every list-change handler, outside any lock.
    func notifyListChanged() {
        let handlers = observers.withLock { Array($0.listChangeHandlers.values) }
        for handler in handlers { handler() }
    }
}
