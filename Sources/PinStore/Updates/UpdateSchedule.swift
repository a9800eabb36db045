import Foundation

/// When the next silent update is due (the deployed clients' rule).
enum UpdateSchedule {
    /// For each name take its latest-expiring entry; let `interval` be the earliest of those
    /// minus now. Within the expiration threshold it shrinks to an eighth (so a pin about to
    /// expire is refreshed several times before it does); past due it is 0. The result is
    /// `now + min(interval, periodicInterval)`.
    static func nextUpdate(for entries: [FingerprintEntry], now: Date, periodicInterval: TimeInterval, expirationThreshold: TimeInterval) -> Date {
        var latestByName: [String: Int64] = [:]
        for entry in entries {
            let name = HostName.normalized(entry.name)
            latestByName[name] = max(latestByName[name] ?? .min, entry.expires)
        }
        guard let earliest = latestByName.values.min() else { return now }
        var interval = TimeInterval(earliest) - now.timeIntervalSince1970
        if interval > 0, interval < expirationThreshold {
            interval *= 0.125
        } else if interval <= 0 {
            interval = 0
        }
        return now.addingTimeInterval(min(interval, periodicInterval))
    }
}
