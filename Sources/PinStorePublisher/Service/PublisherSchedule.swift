import Foundation

/// When the publisher does what: a plain value with no clock and no task (events in, the next
/// action out), so the schedule is tested by handing it dates, with no sleep.
///
/// - Each partner is probed every `probeInterval` (all of them at start-up).
/// - A publication cycle (plan, propose or co-sign, finish, publish, re-sign when due) runs
///   after every probe round and at least every `cycleInterval` (co-signing other vantage
///   points' proposals and re-signing need no probe).
/// - After a cycle that failed to publish (a signing command, a full disk), the next one comes
///   after a minute, then two, four... never later than `cycleInterval`.
package struct PublisherSchedule: Sendable, Equatable {
    /// What to do now.
    package enum Action: Sendable, Equatable {
        /// Probe these partners (due now).
        case probe([String])
        /// Run a publication cycle.
        case cycle
        /// Nothing is due before this.
        case sleep(until: Date)
    }

    package private(set) var nextProbe: [String: Date]
    /// When each partner was last probed (a requested probe keeps a gap after it).
    package private(set) var lastProbe: [String: Date] = [:]
    package private(set) var nextCycle: Date
    package private(set) var failedCycles = 0
    package let probeInterval: TimeInterval
    package let cycleInterval: TimeInterval

    /// The first retry delay after a failed cycle.
    static let firstRetryDelay: TimeInterval = 60

    package init(partners: [String], start: Date, probeInterval: TimeInterval, cycleInterval: TimeInterval) {
        nextProbe = Dictionary(partners.map { ($0, start) }, uniquingKeysWith: { first, _ in first })
        nextCycle = start
        self.probeInterval = probeInterval
        self.cycleInterval = cycleInterval
    }

    /// Probes come first (a cycle should see the freshest observations), then the cycle.
    package func nextAction(at now: Date) -> Action {
        let due = nextProbe.filter { $0.value <= now }.keys.sorted()
        if !due.isEmpty { return .probe(due) }
        if nextCycle <= now { return .cycle }
        let earliestProbe = nextProbe.values.min() ?? nextCycle
        return .sleep(until: min(earliestProbe, nextCycle))
    }

    /// `partners` were probed at `now`: next probe in `probeInterval`, and a cycle now.
    package mutating func probed(_ partners: [String], at now: Date) {
        for id in partners {
            nextProbe[id] = now.addingTimeInterval(probeInterval)
            lastProbe[id] = now
        }
        nextCycle = min(nextCycle, now)
    }

    /// Asks for `partners` to be probed now (a store's report, or another vantage point's
    /// proposal naming a certificate this one has not seen): each is probed at once unless it
    /// was probed within `minimumGap`, so neither reports nor proposals can make the publisher
    /// probe a partner more often than that. A partner probed within the gap is probed when the
    /// gap ends instead: the request may be about a change made just after that probe (a
    /// partner that swaps its leaf seconds after a probe), and the stores send their report of
    /// it once, so dropping it would leave the swap unseen until the next `probeInterval`.
    /// Returns the partners now due; unknown ones are ignored.
    @discardableResult
    package mutating func requestProbe(_ partners: [String], at now: Date, minimumGap: TimeInterval) -> [String] {
        var due: [String] = []
        for id in partners where nextProbe[id] != nil {
            if let last = lastProbe[id], now.timeIntervalSince(last) < minimumGap, last <= now {
                nextProbe[id] = min(nextProbe[id] ?? now, last.addingTimeInterval(minimumGap))
                continue
            }
            nextProbe[id] = min(nextProbe[id] ?? now, now)
            due.append(id)
        }
        return due
    }

    /// A cycle ended at `now`.
    package mutating func cycled(at now: Date, succeeded: Bool) {
        if succeeded {
            failedCycles = 0
            nextCycle = now.addingTimeInterval(cycleInterval)
        } else {
            failedCycles += 1
            let delay = Self.firstRetryDelay * pow(2, Double(min(failedCycles - 1, 20)))
            nextCycle = now.addingTimeInterval(min(delay, cycleInterval))
        }
    }
}
