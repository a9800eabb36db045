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
/// ``submit(_:at:)`` runs on the connection's thread and does a lock and an append, nothing
/// more; a detached task, started when there is work and ending when there is none, builds each
/// report (PEM through OpenSSL, JSON) and sends it through ``PinFailureReportSender``. Bounds:
/// - an identical report (same content apart from the date) goes out at most once per
///   ``Limits/repeatInterval``, sent or not (a collector that is down is not retried);
/// - at most ``Limits/maximumPending`` failures wait; one more is dropped;
/// - after a failed delivery, failures are dropped without an attempt for
///   ``Limits/pauseAfterFailure`` (by the store's clock);
/// - at most ``Limits/maximumRemembered`` report digests are remembered for the rate limit; the
///   oldest are forgotten first (such a report may then go out again sooner than a day later).
/// Every report ends in exactly one `result` of `pinstore_reports_total` (`sent`, `failed`,
/// `dropped`, `duplicate`), and a dropped or failed one in a debug log line.
package final class PinFailureReporter: Sendable {
    /// The reporter's bounds.
    package struct Limits: Sendable {
        /// Failures waiting to be sent at most.
        package var maximumPending = 32
        /// Report digests remembered for the rate limit at most (32 bytes and a date each).
        package var maximumRemembered = 1_024
        /// How long an identical report stays suppressed (seconds).
        package var repeatInterval: TimeInterval = 86_400
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
    private let state = Locked(State())

    private struct State {
        /// Failures waiting, oldest first, and the same as a set (an identical failure already
        /// waiting is a duplicate, so a flood of one failure holds one slot).
        var pending: [(PinFailureOccurrence, Date)] = []
        var pendingSet: Set<PinFailureOccurrence> = []
        /// Report digest -> when it was last let through, and in which order (ties of a clock
        /// that did not move are broken by it, so the oldest is always forgotten first).
        var remembered: [Data: (date: Date, order: UInt64)] = [:]
        var nextOrder: UInt64 = 0
        var draining = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Until when deliveries are paused after a failed one.
        var pausedUntil: Date?

        func isPaused(at date: Date) -> Bool {
            guard let pausedUntil else { return false }
            return date < pausedUntil
        }

        var pendingCount: Int { pending.count }

        /// The oldest waiting failure (the queue is short: removing the first is cheap).
        mutating func popPending() -> (PinFailureOccurrence, Date)? {
            guard !pending.isEmpty else { return nil }
            let next = pending.removeFirst()
            pendingSet.remove(next.0)
            return next
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
        func counter(_ result: String) -> Counter {
            Counter(label: Self.metricLabel, dimensions: [("store", identifier), ("result", result)], factory: metricsFactory)
        }
        sent = counter("sent")
        failed = counter("failed")
        dropped = counter("dropped")
        duplicates = counter("duplicate")
    }

    /// Queues a report of `occurrence` (which happened at `date`) unless an identical one is
    /// already waiting or the queue is full. Never waits, never throws.
    func submit(_ occurrence: PinFailureOccurrence, at date: Date) {
        enum Outcome { case queued(startDrain: Bool), duplicate, full, paused }
        let outcome = state.withLock { state -> Outcome in
            if state.pendingSet.contains(occurrence) { return .duplicate }
            if state.isPaused(at: date) { return .paused }
            guard state.pendingCount < limits.maximumPending else { return .full }
            state.pending.append((occurrence, date))
            state.pendingSet.insert(occurrence)
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
        case .full:
            dropped.increment()
            logger.debug("pin-failure report dropped: the report queue is full (is the collector down or slow?)", metadata: [
                "pinstore.report.host": "\(occurrence.host)", "pinstore.report.limit": "\(limits.maximumPending)",
            ])
        case .paused:
            dropped.increment()
            logger.debug("pin-failure report dropped: the last delivery failed, deliveries are paused", metadata: [
                "pinstore.report.host": "\(occurrence.host)", "pinstore.report.pause": "\(limits.pauseAfterFailure)",
            ])
        }
    }

    /// Sends what waits, one report at a time, until nothing does.
    private func drain() async {
        while true {
            let next = state.withLock { state -> (PinFailureOccurrence, Date)? in
                if let next = state.popPending() { return next }
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
        let report = Self.report(of: occurrence, at: date)
        guard let digest = report.contentDigest(), let body = try? report.jsonData() else {
            failed.increment()
            logger.debug("pin-failure report could not be encoded", metadata: ["pinstore.report.host": "\(occurrence.host)"])
            return
        }
        guard admit(digest, at: date) else {
            duplicates.increment()
            return
        }
        do {
            try await sender.send(body, to: uri, timeout: limits.timeout)
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

    /// The rate limit: whether a report with `digest` may go out at `date`, remembering it if so.
    private func admit(_ digest: Data, at date: Date) -> Bool {
        state.withLock { state in
            if let last = state.remembered[digest]?.date, date < last + limits.repeatInterval, date >= last {
                return false
            }
            if state.remembered[digest] == nil, state.remembered.count >= limits.maximumRemembered {
                // Forget what the rate limit no longer needs; if everything is recent, the oldest.
                let horizon = date - limits.repeatInterval
                state.remembered = state.remembered.filter { $0.value.date > horizon && $0.value.date <= date }
                while state.remembered.count >= limits.maximumRemembered,
                      let oldest = state.remembered.min(by: { ($0.value.date, $0.value.order) < ($1.value.date, $1.value.order) })?.key {
                    state.remembered.removeValue(forKey: oldest)
                }
            }
            state.nextOrder &+= 1
            state.remembered[digest] = (date, state.nextOrder)
            return true
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
    package var pendingCount: Int { state.withLock { $0.pendingCount } }
    /// Report digests remembered now for the rate limit.
    package var rememberedCount: Int { state.withLock { $0.remembered.count } }
}
