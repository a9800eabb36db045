import Foundation

/// How long a test waits for an event before it gives up: a hang guard, not a speed check.
///
/// Tests wait on the event itself (a line printed, a file written, a download counted); this
/// bound only ends a wait for an event that is never coming, so that the test fails instead of
/// hanging. Ten minutes: what takes milliseconds alone took minutes to be looked at when the
/// whole suite ran beside other builds and a CPU hog (`stress-ng --cpu 4` on 2 cores), and a
/// tighter bound measured that machine, not the code.
package enum HangGuard {
    /// Seconds.
    package static let seconds: TimeInterval = 600
}

/// Waits until `condition` holds, looking again every `interval`; false when it still does not
/// after ``HangGuard/seconds``.
///
/// The condition is looked at before the time is, and once more at the end: a task the loaded
/// machine let run again only after the guard had passed still sees an event that came in time.
package func pollUntil(every interval: Duration = .milliseconds(50), _ condition: () -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(HangGuard.seconds)
    while !condition() {
        if Date() >= deadline { return condition() }
        try await Task.sleep(for: interval)
    }
    return true
}
