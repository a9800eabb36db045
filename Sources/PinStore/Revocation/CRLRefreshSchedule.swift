import Foundation

/// When ``PinStore/run()`` fetches cached CRLs again: a pure function of what is cached and one
/// time, so it is tested without sockets or sleeps. A CRL is due ``CRLChecker/refreshMargin``
/// before its `nextUpdate` (or at half its lifetime); a URL whose last attempt failed is tried
/// again after the retry interval.
enum CRLRefreshSchedule {
    /// One cached distribution point.
    struct Item: Sendable, Equatable {
        let url: String
        /// When its CRL is due (Unix seconds); nil when no CRL is held.
        let refreshAt: Int64?
        /// When it was last fetched or tried (Unix seconds).
        let lastAttempt: Int64
    }

    /// What to do now, and when to look again.
    struct Plan: Sendable, Equatable {
        /// The URLs to fetch now, in order.
        let due: [String]
        /// When the next item falls due (Unix seconds); nil when nothing is cached.
        let nextWake: Int64?
    }

    /// The plan at `now`.
    static func plan(_ items: [Item], now: Int64, retryInterval: Int64) -> Plan {
        var due: [String] = []
        var next: Int64?
        for item in items {
            // Held and not yet tried since it fell due: at its refresh time. Otherwise (a
            // refresh failed, or nothing is held) the retry interval after the last attempt.
            let wake: Int64
            if let refreshAt = item.refreshAt, item.lastAttempt < refreshAt {
                wake = refreshAt
            } else {
                wake = item.lastAttempt + retryInterval
            }
            if wake <= now {
                due.append(item.url)
            } else {
                next = min(next ?? wake, wake)
            }
        }
        return Plan(due: due.sorted(), nextWake: next)
    }
}
