import Dispatch
import Foundation

/// A total time limit on work the library starts (a download, a report delivery, a handshake's
/// wait for CRLs), kept whatever the work does.
///
/// FoundationNetworking ignores `timeoutIntervalForResource` on Linux (Swift 6.3.1): only its
/// idle timeout fires, so a server that sends one byte every quarter second keeps a download
/// open for as long as it likes (a CRL download stayed open 38 s past a 6 s limit). No
/// transport option is trusted for the total; the limit is this race instead: the work runs in
/// a task of its own, and when the time passes first that task is cancelled (a URLSession
/// download cancels its transfer, which closes its connection) and abandoned, and the caller
/// goes on at once with the deadline's error, without waiting for the work to notice.
///
/// The time is measured on the monotonic clock, not on the store's ``PinStoreClock``: that
/// clock says what time it is for expiry and schedules (tests freeze it and move it by hours),
/// while a deadline bounds time actually spent waiting on a peer. The timers fire on a
/// dispatch queue of their own, which libdispatch serves from threads outside Swift's
/// cooperative pool: a limit measured by a task sleeping in that pool (a thread per core) waits
/// for a turn behind whatever crowds it, which is how a 2 s CRL budget took 9.7 to 19 s beside
/// a thousand fetches.
///
/// Work that reports its completion from a thread of its own (a URLSession delegate) decides
/// the race there (``race(seconds:start:expired:cancelled:)``): a download that finished in time
/// is not lost to the deadline while its caller waits for a turn on a crowded pool. Work that
/// is only an `async` function (``run(seconds:_:expired:)``) finishes when its task runs, so a
/// crowded pool counts against it: the store gives such work (a fetcher of the app's) a margin
/// over its own deadline (``FingerprintListFetcher/fetchWithinDeadline(_:)``).
package enum TotalDeadline {
    private static let timers = DispatchQueue(label: "PinStore.TotalDeadline")

    /// The longest limit kept as given (about 115 days); a longer one, or infinity, is this.
    /// A limit that long bounds nothing in practice, but the arithmetic stays finite.
    static let longest: TimeInterval = 10_000_000

    /// `seconds` as a limit the timer can take: NaN and negative mean at once, past
    /// ``longest`` means ``longest``. Never traps.
    static func clamped(_ seconds: TimeInterval) -> TimeInterval {
        guard !seconds.isNaN else { return 0 }
        return min(max(seconds, 0), longest)
    }

    /// Starts work that reports its own outcome through `finish`, from any thread, and returns
    /// the first of that outcome and the deadline's.
    ///
    /// - Parameters:
    ///   - seconds: The limit, from now (clamped: ``clamped(_:)``).
    ///   - start: Starts the work (called once, at once) and returns how to cancel it. The work
    ///     calls `finish` once with its outcome; a call after the race is decided is ignored.
    ///   - expired: The error when the limit passes first; the work is then cancelled.
    ///   - cancelled: The error when the caller's task is cancelled first; the work is then
    ///     cancelled.
    package static func race<Success: Sendable, Failure: Error>(
        seconds: TimeInterval,
        start: (_ finish: @escaping @Sendable (Result<Success, Failure>) -> Void) -> (@Sendable () -> Void),
        expired: @escaping @Sendable () -> Failure,
        cancelled: @escaping @Sendable () -> Failure
    ) async -> Result<Success, Failure> {
        let race = Race<Result<Success, Failure>>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Success, Failure>, Never>) in
                race.wait(continuation)
                let cancel = start { race.finish($0) }
                let timer = DispatchWorkItem {
                    race.finish(.failure(expired()), beforeResuming: cancel)
                }
                race.started(cancel: cancel, timer: timer)
                timers.asyncAfter(deadline: .now() + .nanoseconds(Int(clamped(seconds) * 1_000_000_000)), execute: timer)
            }
        } onCancel: {
            race.cancel(with: .failure(cancelled()))
        }
    }

    /// Runs `operation` for at most `seconds`: in a task of its own, cancelled and abandoned
    /// when the limit passes first (the caller goes on at once with `expired()`).
    ///
    /// - Parameters:
    ///   - seconds: The limit, from now (clamped: ``clamped(_:)``).
    ///   - operation: The work.
    ///   - expired: The error thrown when the limit passes first.
    /// - Returns: What `operation` returned, when it finished first.
    /// - Throws: What `operation` threw, or `expired()`. Cancelling the caller cancels
    ///   `operation`; what it then ends with is returned (or the deadline's error, if that comes first).
    package static func run<Success: Sendable, Failure: Error>(
        seconds: TimeInterval,
        _ operation: @escaping @Sendable () async throws(Failure) -> Success,
        expired: @escaping @Sendable () -> Failure
    ) async throws(Failure) -> Success {
        let race = Race<Result<Success, Failure>>()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Success, Failure>, Never>) in
                race.wait(continuation)
                let work = Task {
                    do throws(Failure) {
                        race.finish(.success(try await operation()))
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                let timer = DispatchWorkItem {
                    race.finish(.failure(expired()), beforeResuming: { work.cancel() })
                }
                race.started(cancel: { work.cancel() }, timer: timer)
                timers.asyncAfter(deadline: .now() + .nanoseconds(Int(clamped(seconds) * 1_000_000_000)), execute: timer)
            }
        } onCancel: {
            // The work ends as it ends when cancelled; its outcome (or the deadline's) is returned.
            race.cancel(with: nil)
        }
        return try result.get()
    }

    /// Waits for `operation` for at most `seconds`, and returns whether it finished; the
    /// operation is not cancelled when the time passes, it goes on in the background (a
    /// handshake stops waiting for a CRL download, which goes on so the next one finds the CRL).
    package static func wait(atMost seconds: TimeInterval, for operation: @escaping @Sendable () async -> Void) async -> Bool {
        let race = Race<Bool>()
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            race.wait(continuation)
            let work = Task {
                await operation()
                race.finish(true)
            }
            let timer = DispatchWorkItem { race.finish(false) }
            race.started(cancel: { _ = work }, timer: timer)
            timers.asyncAfter(deadline: .now() + .nanoseconds(Int(clamped(seconds) * 1_000_000_000)), execute: timer)
        }
    }
}

/// The first of two outcomes, handed to one waiter; the other is dropped.
private final class Race<Outcome: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var finished = false
        var cancelWork: (@Sendable () -> Void)?
        var timer: DispatchWorkItem?
        /// The caller was cancelled before the work started; with the outcome to give then.
        var callerCancelled = false
        var cancelledOutcome: Outcome?
    }

    private let state = Locked(State())

    func wait(_ continuation: CheckedContinuation<Outcome, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Keeps how to cancel the work, and the timer (stopped once the race is decided). A caller
    /// cancelled before this cancels the work now.
    func started(cancel: @escaping @Sendable () -> Void, timer: DispatchWorkItem) {
        let (cancelNow, outcome, finished) = state.withLock { state -> (Bool, Outcome?, Bool) in
            state.cancelWork = cancel
            state.timer = timer
            return (state.callerCancelled, state.cancelledOutcome, state.finished)
        }
        if finished { timer.cancel() }
        if cancelNow {
            if let outcome, finish(outcome, beforeResuming: cancel) { return }
            cancel()
        }
    }

    /// The caller's task was cancelled: the work is cancelled, and `outcome` (when given) ends
    /// the race at once.
    func cancel(with outcome: Outcome?) {
        let work = state.withLock { state -> (@Sendable () -> Void)? in
            state.callerCancelled = true
            state.cancelledOutcome = outcome
            return state.cancelWork
        }
        guard let work else { return }
        if let outcome, finish(outcome, beforeResuming: work) { return }
        work()
    }

    /// Hands `outcome` to the waiter if nothing came first; returns whether it did. When it
    /// does, `beforeResuming` runs first (the work is cancelled before its caller goes on, so
    /// the caller never finds it still running).
    @discardableResult
    func finish(_ outcome: Outcome, beforeResuming: () -> Void = {}) -> Bool {
        let (continuation, timer) = state.withLock { state -> (CheckedContinuation<Outcome, Never>?, DispatchWorkItem?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.timer = nil
                state.cancelWork = nil
            }
            return (state.continuation, state.timer)
        }
        guard let continuation else { return false }
        timer?.cancel()
        beforeResuming()
        continuation.resume(returning: outcome)
        return true
    }
}
