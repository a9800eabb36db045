import Foundation

/// How often a refusal may start a download (``PinStore/Configuration/refusalUpdateInterval``):
/// a partner's unannounced certificate rotation is picked up at the first refused connection,
/// but a host that keeps being refused cannot turn every connection into a list download.
///
/// A plain value with no clock and no task: ``ListUpdater`` keeps it behind its lock and
/// passes the time in; tests drive it with dates.
struct RefusalBudget: Sendable, Equatable {
    /// The shortest time between two downloads started on behalf of refusals (seconds).
    let interval: TimeInterval
    /// When the last one started.
    private(set) var lastStart: Date?

    init(interval: TimeInterval) {
        self.interval = interval
    }

    /// Whether a refusal may start a download at `now`; when it may, `now` is spent. A clock
    /// that went back before the last start does not hold downloads back.
    mutating func spend(at now: Date) -> Bool {
        if let lastStart, now >= lastStart, now.timeIntervalSince(lastStart) < interval { return false }
        lastStart = now
        return true
    }
}
