import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// A fleet of stores against one list server, on a virtual clock: the real schedule
/// (``RefreshSchedule``), refusal budget (``RefusalBudget``) and jitter code, one pinned request
/// per store per second, and a partner cutover that the publisher answers `publishDelay`
/// seconds later. What it reports is what the list server sees: requests per second (full
/// downloads and 304s apart) in steady state and after the cutover, and each store's refusal
/// window. `swift test` runs 1,000 stores; `PINSTORE_FLEET_STORES=10000` the 10,000.
struct FleetSimulation {
    struct Figures: CustomStringConvertible {
        var stores: Int
        /// The most scheduled downloads in one second, for a fleet started together.
        var steadyPeakPerSecond: Int
        /// The same without jitter (every store on the same second).
        var steadyPeakWithoutJitter: Int
        /// The most requests in one second after the cutover, and in its first second.
        var cutoverPeakPerSecond: Int
        var cutoverPeakAfterFirstSecond: Int
        var fullDownloads: Int
        var notModified: Int
        /// Refusal windows (cutover to the first allowed request), seconds.
        var windows: [Int]

        func percentile(_ p: Double) -> Int {
            let sorted = windows.sorted()
            guard !sorted.isEmpty else { return -1 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }

        var description: String {
            "\(stores) stores: steady peak \(steadyPeakPerSecond)/s (\(steadyPeakWithoutJitter)/s without jitter); after the cutover "
                + "\(cutoverPeakPerSecond)/s in its first second, then at most \(cutoverPeakAfterFirstSecond)/s; \(fullDownloads) full downloads, "
                + "\(notModified) 304s; refusal window p50 \(percentile(0.5)) s, p99 \(percentile(0.99)) s, max \(windows.max() ?? -1) s"
        }
    }

    static func run(stores: Int, seed: UInt64, publishDelay: Int, refusalInterval: TimeInterval = 60,
                    periodicInterval: TimeInterval = 7 * 86_400, horizon: Int = 900) -> Figures {
        var random = SeededRandom(seed: seed)
        let start = Date(timeIntervalSince1970: 1_893_456_000)
        // Steady state: a fleet started together applies the same list at `start`.
        var buckets: [Int: Int] = [:]
        for _ in 0..<stores {
            let due = RefreshSchedule.jittered(start + periodicInterval, now: start, earliest: start + 60, jitter: Double.random(in: 0...1, using: &random))
            buckets[Int(due.timeIntervalSince(start)), default: 0] += 1
        }
        // The cutover: every store refuses the new certificate from second 0 until it holds a
        // list with the new pin (published at `publishDelay`).
        var budgets = Array(repeating: RefusalBudget(interval: refusalInterval), count: stores)
        var fixedAt = [Int?](repeating: nil, count: stores)
        var perSecond: [Int] = []
        var full = 0, notModified = 0
        for second in 0..<horizon {
            let now = start + TimeInterval(second)
            var requests = 0
            for store in 0..<stores where fixedAt[store] == nil {
                guard budgets[store].spend(at: now) else { continue }
                requests += 1
                if second >= publishDelay {
                    full += 1
                    fixedAt[store] = second
                    budgets[store].downloadEnded(at: now, outcome: .newList, byRefusal: true, jitter: 0)
                } else {
                    notModified += 1
                    budgets[store].downloadEnded(at: now, outcome: .unchanged, byRefusal: true, jitter: Double.random(in: 0...1, using: &random))
                }
            }
            perSecond.append(requests)
        }
        return Figures(stores: stores, steadyPeakPerSecond: buckets.values.max() ?? 0, steadyPeakWithoutJitter: stores,
                       cutoverPeakPerSecond: perSecond.max() ?? 0, cutoverPeakAfterFirstSecond: perSecond.dropFirst().max() ?? 0,
                       fullDownloads: full, notModified: notModified, windows: fixedAt.compactMap { $0 })
    }
}

@Suite struct FleetSimulationTests {
    static var stores: Int { ProcessInfo.processInfo.environment["PINSTORE_FLEET_STORES"].flatMap(Int.init) ?? 1_000 }

    /// A new list one minute after the cutover (a report, a round of agreement): every store
    /// allows the partner again within two minutes, each downloads the whole list once, and after
    /// the cutover's first second the quick looks are spread (no second sees a tenth of the fleet).
    /// A looser publication (two minutes) still brings every store the list within three.
    @Test func aFleetRecoversFromACutoverWithinTwoMinutesWithoutAHerd() {
        let figures = FleetSimulation.run(stores: Self.stores, seed: 44, publishDelay: 60)
        print("fleet simulation, list published 60 s after the cutover: \(figures)")
        #expect(figures.windows.count == Self.stores)
        #expect(figures.percentile(0.99) <= 120)
        #expect(figures.fullDownloads == Self.stores)
        #expect(figures.cutoverPeakAfterFirstSecond * 10 < Self.stores)
        let late = FleetSimulation.run(stores: Self.stores, seed: 45, publishDelay: 120)
        print("fleet simulation, list published 120 s after the cutover: \(late)")
        #expect(late.windows.count == Self.stores && (late.windows.max() ?? .max) <= 180)
    }

    /// A fleet started together does not come back together a week later: the scheduled
    /// downloads spread over the last tenth of the interval.
    @Test func aFleetStartedTogetherSpreadsItsScheduledDownloads() {
        let figures = FleetSimulation.run(stores: Self.stores, seed: 7, publishDelay: 0, horizon: 1)
        print("fleet simulation, steady state: \(figures)")
        #expect(figures.steadyPeakPerSecond * 100 < figures.steadyPeakWithoutJitter)
    }
}
