import Foundation

/// Where a ``PinStore`` reads the current time. Tests inject a fixed or stepped clock so
/// expiry and scheduling are exact; apps use ``SystemClock``.
public protocol PinStoreClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: PinStoreClock {
    /// Creates the system clock.
    public init() {}
    /// The current time.
    public func now() -> Date { Date() }
}
