import Foundation

/// When a store goes to the network on its own: the list's own schedule (its `nextUpdate`),
/// pushed back after failed downloads so that a list server that is down is asked again after
/// a minute, then two, four, ... but never less often than the periodic interval.
///
/// A plain value with no clock and no task: ``ListUpdater`` keeps it behind its lock and
/// publishes ``dueDate`` to the store's read state, which every `matchPins` checks; the
/// updater's schedule loop (``PinStore/run()``) sleeps until it. Tests drive it with dates.
struct RefreshSchedule: Sendable, Equatable {
    /// The first retry delay after a failed download (seconds); it doubles with every further
    /// failure.
    static let firstRetryDelay: TimeInterval = 60

    /// When the list in force wants its next update.
    private(set) var listDue: Date
    /// Failed downloads in a row since the last list was applied.
    private(set) var failures = 0
    /// No scheduled download before this (the backoff after a failure).
    private(set) var retryAt: Date?
    /// When the next scheduled download is due: the later of the two. Stored, so the hot
    /// path reads one value.
    private(set) var dueDate: Date
    /// Longest wait between scheduled updates (the configuration's periodic interval).
    let periodicInterval: TimeInterval

    init(listDue: Date, periodicInterval: TimeInterval) {
        self.listDue = listDue
        self.dueDate = listDue
        self.periodicInterval = periodicInterval
    }

    /// Whether a scheduled download should start at `now`.
    func isDue(at now: Date) -> Bool { now >= dueDate }

    /// A list was applied (downloaded or adopted): its schedule rules, failures are forgotten.
    mutating func listApplied(nextUpdate: Date) {
        listDue = nextUpdate
        failures = 0
        retryAt = nil
        serverRetryAfter = nil
        dueDate = listDue
    }

    /// The longest `Retry-After` honoured: a misconfigured load shedder or a hostile edge
    /// cannot stop a fleet's downloads for days (past the list's `expires`) with one answer.
    static let maximumRetryAfter: TimeInterval = 3_600

    /// Until when the list server asked for no request (its `Retry-After`), if it did.
    private(set) var serverRetryAfter: Date?

    /// A download (scheduled or not) failed at `now`: back off before the next scheduled one.
    /// `retryAfter` is the server's `Retry-After` (429 or 503): no request, scheduled or on a
    /// refusal, before it, up to an hour and the periodic interval. `jitter` (0 to 1) stretches
    /// the wait by up to a quarter, so a fleet that failed together does not come back together.
    mutating func downloadFailed(at now: Date, retryAfter: TimeInterval? = nil, jitter: Double = 0) {
        failures += 1
        let stretch = 1 + 0.25 * min(max(jitter, 0), 1)
        var delay = Self.retryDelay(afterFailures: failures, periodicInterval: periodicInterval) * stretch
        if let retryAfter, retryAfter.isFinite, retryAfter > 0 {
            let asked = min(retryAfter, Self.maximumRetryAfter, periodicInterval) * stretch
            serverRetryAfter = now.addingTimeInterval(asked)
            delay = max(delay, asked)
        } else {
            serverRetryAfter = nil
        }
        retryAt = now.addingTimeInterval(delay)
        dueDate = max(listDue, retryAt ?? listDue)
    }

    /// The list server asked for no request before the date returned (Retry-After), or nil.
    /// Only that holds refusal-triggered downloads back; a backoff after plain failures does not.
    func serverAskedToWait(at now: Date) -> Date? {
        guard let serverRetryAfter, serverRetryAfter > now else { return nil }
        return serverRetryAfter
    }

    /// `nextUpdate` brought forward by up to a tenth of the time to it (`jitter` from 0 to 1),
    /// never before `earliest`: stores that applied a list together spread their next downloads.
    static func jittered(_ nextUpdate: Date, now: Date, earliest: Date, jitter: Double) -> Date {
        let interval = nextUpdate.timeIntervalSince(now)
        guard interval > 0 else { return nextUpdate }
        return max(earliest, now.addingTimeInterval(interval * (1 - 0.1 * min(max(jitter, 0), 1))))
    }

    /// When a list read from the store file at start-up is next due. The file's `nextUpdate` and
    /// `updatedAt` are not signed, and the file may be old (a copy restored from a backup, one
    /// planted before this user's store existed): the first download of a process must never
    /// wait longer than the configuration allows. So the list is due at the earliest of the
    /// file's `nextUpdate`, `periodicInterval` after the file says it was downloaded, and
    /// `periodicInterval` after the signed timestamp, when the list has one (challenge mode,
    /// whole-list signatures: the only date here nobody can forge); and at once when the file
    /// has no download date, or one more than a minute ahead of the clock.
    static func dueDate(ofListFromFile file: PersistedList, signedTimestamp: Int64?, now: Date,
                        periodicInterval: TimeInterval) -> Date {
        var due = min(Date(timeIntervalSince1970: file.nextUpdate), now.addingTimeInterval(periodicInterval))
        guard let updatedAt = file.updatedAt, updatedAt <= now.timeIntervalSince1970 + firstRetryDelay else { return now }
        due = min(due, Date(timeIntervalSince1970: updatedAt).addingTimeInterval(periodicInterval))
        if let signedTimestamp {
            due = min(due, Date(timeIntervalSince1970: TimeInterval(signedTimestamp)).addingTimeInterval(periodicInterval))
        }
        return due
    }

    /// A minute after the first failure, doubling with each further one, never beyond the
    /// periodic interval (so a drill with a 2-second interval retries every 2 seconds).
    static func retryDelay(afterFailures failures: Int, periodicInterval: TimeInterval) -> TimeInterval {
        let doublings = Double(min(max(failures - 1, 0), 32))
        return min(firstRetryDelay * pow(2, doublings), periodicInterval)
    }
}
