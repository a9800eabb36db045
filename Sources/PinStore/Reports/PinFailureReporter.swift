import CoreMetrics
import Foundation
import Logging

/// One pin failure as an adapter saw it, with everything its report says except the date.
/// Cheap to make on the connection's thread: the PEM and JSON are made later, off it.
struct PinFailureOccurrence: Sendable, Hashable {
    var host: String
    var port: Int?
    var enforced: Bool
    /// The `reason` dimension of `pinstore_decisions_total`.
    var reason: String
    var servedChain: [Data]
    var validatedChain: [Data]
    var applied: AppliedPins
}

/// The pins that applied to a host when it failed, as a report lists them.
struct AppliedPins: Sendable, Hashable {
    var notedHostname: String
    var includeSubdomains: Bool
    var knownPins: [String]
    var expiration: Date?
}

/// Sends pin-failure reports in the background, rate-limited and bounded.
///
/// ``submit(_:at:)`` runs on the connection's thread: a SHA-256 of the failure, a lock, a
/// dictionary lookup and an append, nothing more. A detached task, started when there is work
/// and ending when there is none, builds each report (PEM through OpenSSL, JSON) and sends it
/// through ``PinFailureReportSender``, one at a time. Bounds, all by the store's clock:
/// - an identical report (same content apart from the date) goes out at most once per
///   ``Limits/repeatInterval``, sent or not (a collector that is down is not retried);
/// - at most ``Limits/maximumPerMinute`` reports a minute (a token bucket), so a flood of
///   distinct failures costs the app a bounded amount of background work;
/// - at most ``Limits/maximumPending`` failures wait; one more is dropped;
/// - after a failed delivery, failures are dropped without an attempt for
///   ``Limits/pauseAfterFailure``;
/// - at most ``Limits/maximumRemembered`` report digests are remembered for the once-a-day
///   rule, the oldest forgotten first (such a report may then go out again sooner).
/// Every failure submitted ends in exactly one `result` of `pinstore_reports_total` (`sent`,
/// `failed`, `dropped`, `duplicate`), and a dropped or failed one in a debug log line.
package final class PinFailureReporter: Sendable {
    /// The reporter's bounds.
    package struct Limits: Sendable {
        /// Failures waiting to be sent at most.
        package var maximumPending = 32
        /// Report digests remembered for the once-a-day rule at most (32 bytes and a date each).
        package var maximumRemembered = 1_024
        /// How long an identical report stays suppressed (seconds).
        package var repeatInterval: TimeInterval = 86_400
        /// Reports let through per minute at most (also the largest burst).
        package var maximumPerMinute = 60
        /// Seconds before one delivery is abandoned.
        package var timeout: TimeInterval = 15
        /// After a failed delivery, how long (seconds) new failures are dropped without trying
        /// the collector (a collector that is down costs one attempt per pause, not one per failure).
        package var pauseAfterFailure: TimeInterval = 60

        package init() {}
    }

    static let metricLabel = "pinstore_reports_total"

    package let uri: URL
    private let sender: any PinFailureReportSender
    private let limits: Limits
    private let clock: any PinStoreClock
    private let logger: Logger
    private let sent: Counter
    private let failed: Counter
    private let dropped: Counter
    private let duplicates: Counter
    private let state: Locked<State>

    private struct State {
        /// Failures waiting, oldest first.
        var pending: [(PinFailureOccurrence, Date)] = []
        /// The once-a-day memory.
        var recent: RecentReports
        /// The per-minute budget.
        var budget: ReportBudget
        var draining = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Until when deliveries are paused after a failed one.
        var pausedUntil: Date?

        func isPaused(at date: Date) -> Bool {
            guard let pausedUntil else { return false }
            return date < pausedUntil
        }
    }

    /// A reporter to `uri`. `identifier` is the store's, the `store` dimension of the metric.
    package init(uri: URL, sender: any PinFailureReportSender, limits: Limits = Limits(), clock: any PinStoreClock,
                 identifier: String, metricsFactory: any MetricsFactory, logger: Logger) {
        self.uri = uri
        self.sender = sender
        self.limits = limits
        self.clock = clock
        self.logger = logger
        self.state = Locked(State(recent: RecentReports(capacity: limits.maximumRemembered, interval: limits.repeatInterval),
                                  budget: ReportBudget(perMinute: limits.maximumPerMinute)))
        func counter(_ result: String) -> Counter {
            Counter(label: Self.metricLabel, dimensions: [("store", identifier), ("result", result)], factory: metricsFactory)
        }
        sent = counter("sent")
        failed = counter("failed")
        dropped = counter("dropped")
        duplicates = counter("duplicate")
    }

    /// Queues a report of `occurrence` (which happened at `date`, by the store's clock) unless
    /// an identical one went out less than a day ago or a bound says no. Never waits, never throws.
    func submit(_ occurrence: PinFailureOccurrence, at date: Date) {
        enum Outcome { case queued(startDrain: Bool), duplicate, dropped(String) }
        let digest = occurrence.digest
        let outcome = state.withLock { state -> Outcome in
            if state.recent.isRecent(digest, at: date) { return .duplicate }
            if state.isPaused(at: date) { return .dropped("the last delivery failed, deliveries are paused") }
            guard state.pending.count < limits.maximumPending else { return .dropped("the report queue is full (is the collector slow?)") }
            guard state.budget.spend(at: date) else { return .dropped("more than \(limits.maximumPerMinute) reports this minute") }
            state.recent.remember(digest, at: date)
            state.pending.append((occurrence, date))
            let startDrain = !state.draining
            state.draining = true
            return .queued(startDrain: startDrain)
        }
        switch outcome {
        case .queued(let startDrain):
            if startDrain {
                Task.detached(priority: .utility) { [self] in await drain() }
            }
        case .duplicate:
            duplicates.increment()
        case .dropped(let why):
            dropped.increment()
            logger.debug("pin-failure report dropped: \(why)", metadata: ["pinstore.report.host": "\(occurrence.host)"])
        }
    }

    /// Sends what waits, one report at a time, until nothing does.
    private func drain() async {
        while true {
            let next = state.withLock { state -> (PinFailureOccurrence, Date)? in
                // The queue is short: removing its first element is cheap.
                if !state.pending.isEmpty { return state.pending.removeFirst() }
                state.draining = false
                return nil
            }
            guard let (occurrence, date) = next else { break }
            await deliver(occurrence, at: date)
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.draining else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func deliver(_ occurrence: PinFailureOccurrence, at date: Date) async {
        // Failures queued before a delivery failed wait no longer: the collector is down.
        if state.withLock({ $0.isPaused(at: clock.now()) }) {
            dropped.increment()
            logger.debug("pin-failure report dropped: the last delivery failed, deliveries are paused",
                         metadata: ["pinstore.report.host": "\(occurrence.host)"])
            return
        }
        guard let body = try? Self.report(of: occurrence, at: date).jsonData() else {
            failed.increment()
            logger.debug("pin-failure report could not be encoded", metadata: ["pinstore.report.host": "\(occurrence.host)"])
            return
        }
        do {
            // The limit is kept here too, so no sender, however it behaves, holds the queue longer.
            let sender = self.sender, uri = self.uri, timeout = limits.timeout
            try await PinFailureReportDeadline.run(seconds: timeout, uri: uri) {
                try await sender.send(body, to: uri, timeout: timeout)
            }
            sent.increment()
        } catch {
            let now = clock.now()
            state.withLock { $0.pausedUntil = now + limits.pauseAfterFailure }
            failed.increment()
            logger.debug("pin-failure report not delivered; dropped", metadata: [
                "pinstore.report.host": "\(occurrence.host)", "pinstore.report.error": "\(error)",
            ])
        }
    }

    /// The report an occurrence becomes (certificates as PEM through OpenSSL).
    static func report(of occurrence: PinFailureOccurrence, at date: Date) -> PinFailureReport {
        PinFailureReport(
            dateTime: date,
            hostname: occurrence.host,
            port: occurrence.port,
            notedHostname: occurrence.applied.notedHostname,
            includeSubdomains: occurrence.applied.includeSubdomains,
            enforcePinning: occurrence.enforced,
            validatedCertificateChain: occurrence.validatedChain.map { PEMDocument.encode($0, label: "CERTIFICATE") },
            servedCertificateChain: occurrence.servedChain.map { PEMDocument.encode($0, label: "CERTIFICATE") },
            knownPins: occurrence.applied.knownPins,
            effectiveExpirationDate: occurrence.applied.expiration,
            reason: occurrence.reason)
    }

    // MARK: - For tests

    /// Returns once no report waits or is being sent.
    package func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if !state.draining { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Failures waiting now.
    package var pendingCount: Int { state.withLock { $0.pending.count } }
    /// Report digests remembered now for the once-a-day rule.
    package var rememberedCount: Int { state.withLock { $0.recent.count } }
}

extension PinFailureOccurrence {
    /// SHA-256 over everything the report says but its date: equal digests, identical reports.
    var digest: Data {
        var bytes = Data()
        func add(_ data: Data) {
            withUnsafeBytes(of: UInt32(clamping: data.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(data)
        }
        func add(_ text: String) { add(Data(text.utf8)) }
        add(host)
        add(port.map(String.init) ?? "-")
        add(enforced ? "enforced" : "report-only")
        add(reason)
        add(String(servedChain.count))
        servedChain.forEach(add)
        add(String(validatedChain.count))
        validatedChain.forEach(add)
        add(applied.notedHostname)
        add(applied.includeSubdomains ? "subdomains" : "-")
        add(String(applied.knownPins.count))
        applied.knownPins.forEach(add)
        add(applied.expiration.map { String($0.timeIntervalSince1970) } ?? "-")
        return SHA256Digest.hash(bytes)
    }
}

/// The once-a-day memory: digests of the reports let through and when, at most `capacity`,
/// the oldest forgotten first (in O(1) amortized: a first-in first-out list beside the table).
struct RecentReports {
    let capacity: Int
    let interval: TimeInterval
    private var table: [Data: (date: Date, order: UInt64)] = [:]
    private var order: [(digest: Data, order: UInt64)] = []
    private var head = 0
    private var nextOrder: UInt64 = 0

    init(capacity: Int, interval: TimeInterval) {
        self.capacity = max(1, capacity)
        self.interval = interval
    }

    var count: Int { table.count }

    /// Whether a report with `digest` went out less than `interval` before `date` (a clock
    /// that went backwards lets it through).
    func isRecent(_ digest: Data, at date: Date) -> Bool {
        guard let last = table[digest]?.date else { return false }
        return date >= last && date < last + interval
    }

    /// Remembers that a report with `digest` goes out at `date`.
    mutating func remember(_ digest: Data, at date: Date) {
        if table[digest] == nil {
            while table.count >= capacity, forgetOldest() {}
        }
        nextOrder &+= 1
        table[digest] = (date, nextOrder)
        order.append((digest, nextOrder))
        if head > 64, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        if order.count - head > 2 * capacity + 64 {
            // Digests remembered again leave stale entries behind: rebuild from the table.
            order = table.map { ($0.key, $0.value.order) }.sorted { $0.order < $1.order }
            head = 0
        }
    }

    /// Forgets the oldest digest; false when there was none.
    private mutating func forgetOldest() -> Bool {
        while head < order.count {
            let entry = order[head]
            head += 1
            if table[entry.digest]?.order == entry.order {
                table.removeValue(forKey: entry.digest)
                return true
            }
        }
        return false
    }
}

/// A token bucket: `perMinute` reports a minute, as a burst or spread out.
struct ReportBudget {
    let perMinute: Int
    private var tokens: Double
    private var last: Date?

    init(perMinute: Int) {
        self.perMinute = max(1, perMinute)
        self.tokens = Double(self.perMinute)
    }

    /// Takes one token if there is one at `date`.
    mutating func spend(at date: Date) -> Bool {
        if let last {
            let elapsed = max(0, date.timeIntervalSince(last))
            tokens = min(Double(perMinute), tokens + elapsed * Double(perMinute) / 60)
        }
        last = date
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
