import Foundation

/// Where a ``PinStore`` reads the current time and waits for a scheduled update. Tests inject
/// a clock they set by hand so expiry, scheduling and backoff are exact; apps use
/// ``SystemClock``.
public protocol PinStoreClock: Sendable {
    /// The current time.
    func now() -> Date

    /// Suspends until `deadline` as this clock reads it; throws `CancellationError` when the
    /// task is cancelled first. The default sleeps for the time left on the system clock.
    func sleep(until deadline: Date) async throws
}

extension PinStoreClock {
    /// Sleeps for the time between ``now()`` and `deadline` (at once when it has passed).
    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSince(now())
        if seconds > 0 {
            try await Task.sleep(for: .seconds(seconds))
        } else {
            try Task.checkCancellation()
        }
    }
}

/// The system's wall clock.
public struct SystemClock: PinStoreClock {
    /// Creates the system clock.
    public init() {}
    /// The current time.
    public func now() -> Date { Date() }
}
