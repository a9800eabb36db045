import Foundation

/// How often a refusal may start a download (``PinStore/Configuration/refusalUpdateInterval``):
/// a partner's unannounced certificate rotation is picked up at the first refused connection,
/// but a host that keeps being refused cannot turn every connection into a list download.
///
/// After a refusal's download that brought nothing new (the publisher has not published the new
/// pin yet), the next refusal may download again after 10 to 30 seconds (jittered), up to
/// ``quickRetries`` times, instead of waiting the whole interval: the new list is usually a
/// minute away, and the quick looks cover about two minutes. (Their count and spread come from
/// `FleetSimulationTests`: five looks 10 to 30 seconds apart bring a fleet of 10,000 the list
/// published a minute after a cutover within 89 seconds, at under a tenth of the fleet per
/// second after the cutover's first second.) A download that brings a new list restores the quick retries; a failed one
/// waits the whole interval.
///
/// A plain value with no clock and no task: ``ListUpdater`` keeps it behind its lock and
/// passes the time in; tests drive it with dates.
struct RefusalBudget: Sendable, Equatable {
    /// What a download ended with, as the budget counts it.
    enum Outcome: Sendable, Equatable {
        /// A new list went in force.
        case newList
        /// The list in force is current (the same version, or 304).
        case unchanged
        /// No list came (network, HTTP error, refused list).
        case failed
    }

    /// Quick retries after downloads that brought nothing new.
    static let quickRetries = 5
    /// The quick retry delay: 10 seconds plus up to ``quickJitter`` more.
    static let quickDelay: TimeInterval = 10
    static let quickJitter: TimeInterval = 20

    /// The shortest time between two downloads started on behalf of refusals (seconds).
    let interval: TimeInterval
    /// When the last one started.
    private(set) var lastStart: Date?
    /// No refusal download before this (nil: `interval` after `lastStart`).
    private(set) var notBefore: Date?
    private(set) var quickRetriesLeft = RefusalBudget.quickRetries

    init(interval: TimeInterval) {
        self.interval = interval
    }

    /// Whether a refusal may start a download at `now`; when it may, `now` is spent. A clock
    /// that went back before the last start does not hold downloads back.
    mutating func spend(at now: Date) -> Bool {
        if let lastStart, now >= lastStart {
            let allowed = notBefore ?? lastStart.addingTimeInterval(interval)
            if now < allowed { return false }
        }
        lastStart = now
        notBefore = nil
        return true
    }

    /// A download ended at `now` with `outcome`; `byRefusal` when a refusal started it.
    /// `jitter` (0 to 1) spreads the quick retry between 10 and 30 seconds.
    mutating func downloadEnded(at now: Date, outcome: Outcome, byRefusal: Bool, jitter: Double) {
        switch outcome {
        case .newList:
            quickRetriesLeft = Self.quickRetries
            notBefore = nil
        case .unchanged where byRefusal && quickRetriesLeft > 0:
            quickRetriesLeft -= 1
            let quick = now.addingTimeInterval(Self.quickDelay + Self.quickJitter * min(max(jitter, 0), 1))
            notBefore = lastStart.map { min(quick, $0.addingTimeInterval(interval)) } ?? quick
        case .unchanged, .failed:
            notBefore = nil
        }
    }
}
