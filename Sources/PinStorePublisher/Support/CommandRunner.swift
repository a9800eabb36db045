import CPinStoreSpawn
import Foundation

/// Runs an operator's command (a signing command, the after-publish command) with a total
/// deadline: started with posix_spawn (not Foundation's `Process`: CPinStoreSpawn says why) as the
/// leader of its own process group, so a timeout kills what it started too (`sh -c "a | b"`);
/// its output and error read on threads of their own, each kept to a bound.
enum CommandRunner {
    /// Why a command gave no outcome.
    enum Failure: Error, Equatable {
        /// It could not be started (the reason from `errno`).
        case notStarted(String)
        /// It ran past its deadline; it and its process group were killed.
        case timedOut
        /// It ended, but something it started kept its output open past the deadline (killed).
        case outputHeldOpen
        /// The calling task was cancelled (a graceful shutdown): it and its group were killed.
        case cancelled
    }

    /// How a command ended, and what it printed (each kept to the bound given).
    struct Outcome: Sendable {
        /// Its exit status, or -1 when a signal ended it.
        let exitStatus: Int32
        /// The signal that ended it, or -1.
        let signalNumber: Int32
        let output: Data
        let errors: Data

        /// "exited with status 3: <the start of what it printed on standard error>", or "was
        /// killed by signal 9".
        var describedEnd: String {
            let shown = String(decoding: errors.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let how = signalNumber >= 0 ? "was killed by signal \(signalNumber)" : "exited with status \(exitStatus)"
            return how + (shown.isEmpty ? "" : ": \(shown)")
        }
    }

    /// Runs `arguments` (a program, an absolute path or a name looked up in `PATH`, then its
    /// arguments) with `input` as standard input (nil: /dev/null) and the inherited environment.
    static func run(_ arguments: [String], input: Int32?, timeout: TimeInterval, maximumOutput: Int) async throws(Failure) -> Outcome {
        guard let program = arguments.first else { throw .notStarted("no program given") }
        // A name without a slash is looked up in PATH by env, as a shell would.
        let argv = program.contains("/") ? arguments : ["/usr/bin/env"] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var stdout: Int32 = -1, stderr: Int32 = -1
        let pid = CPinStoreSpawn_start(argv[0], &cArguments, input ?? -1, nil, &stdout, &stderr, 1)
        guard pid > 0 else { throw .notStarted(String(cString: strerror(errno))) }
        let deadline = DispatchTime.now() + timeout
        let end = Eventual<ProcessEnd>()
        Thread {
            // Seen ended but not reaped until `end` holds it: while `end` is pending, the pid
            // (and its group) cannot be reused, so the kill below never hits another process.
            var exitStatus: Int32 = -1, signalNumber: Int32 = -1
            _ = CPinStoreSpawn_wait(pid, &exitStatus, &signalNumber, 0)
            end.fulfil(ProcessEnd(exitStatus: exitStatus, signalNumber: signalNumber)) { CPinStoreSpawn_reap(pid) }
        }.start()
        // Read on threads of their own, so a command that prints a lot never blocks on a full
        // pipe while we wait for its end.
        let output = collect(stdout, keeping: maximumOutput), errors = collect(stderr, keeping: maximumOutput)
        // A cancelled caller (the publisher stopping) does not wait out the deadline: the
        // group is killed at once, which ends the waits below.
        let result: Result<Outcome, Failure> = await withTaskCancellationHandler {
            guard let ended = await end.wait(until: deadline) else {
                end.whilePending { _ = kill(-pid, SIGKILL) }
                _ = await end.wait(until: .now() + 10)
                return .failure(.timedOut)
            }
            guard let printed = await output.wait(until: deadline), let message = await errors.wait(until: deadline) else {
                kill(-pid, SIGKILL)
                return .failure(.outputHeldOpen)
            }
            return .success(Outcome(exitStatus: ended.exitStatus, signalNumber: ended.signalNumber, output: printed, errors: message))
        } onCancel: {
            // Only while it has not been reaped: its pid (and group) cannot have been reused.
            end.whilePending { _ = kill(-pid, SIGKILL) }
            // It ended, but what it started still holds its output open: that process keeps the
            // group (and so its number) in use, as the outputHeldOpen case above relies on too.
            if output.isPending || errors.isPending { _ = kill(-pid, SIGKILL) }
        }
        if Task.isCancelled { throw .cancelled }
        return try result.get()
    }

    /// Reads `descriptor` to its end on a thread of its own, keeping at most `limit` bytes, then
    /// closes it.
    private static func collect(_ descriptor: Int32, keeping limit: Int) -> Eventual<Data> {
        let collected = Eventual<Data>()
        Thread {
            var kept = Data()
            var chunk = [UInt8](repeating: 0, count: 4_096)
            while true {
                // read(2), not FileHandle.availableData, which traps on a read error.
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                if kept.count < limit { kept.append(contentsOf: chunk[0..<min(count, limit - kept.count)]) }
            }
            close(descriptor)
            collected.fulfil(kept)
        }.start()
        return collected
    }
}

/// How a child process ended: its exit status, or the signal that ended it (the other is -1;
/// both are -1 when it could not be waited for).
private struct ProcessEnd: Sendable {
    let exitStatus: Int32
    let signalNumber: Int32
}

/// A value that arrives once, from another thread, awaited with a deadline.
private final class Eventual<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock`.
    private let lock = NSLock()
    private var value: Value?
    private var waiters: [UInt64: CheckedContinuation<Value?, Never>] = [:]
    private var nextWaiter: UInt64 = 0

    /// Sets the value (once), runs `andThen` while still holding the lock, and wakes every waiter.
    func fulfil(_ value: Value, andThen: () -> Void = {}) {
        lock.lock()
        self.value = value
        andThen()
        let resumed = waiters.values
        waiters = [:]
        lock.unlock()
        resumed.forEach { $0.resume(returning: value) }
    }

    /// Whether the value has not arrived yet.
    var isPending: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value == nil
    }

    /// Runs `body` under the lock if the value has not arrived yet.
    func whilePending(_ body: () -> Void) {
        lock.lock()
        if value == nil { body() }
        lock.unlock()
    }

    /// The value, or nil when `deadline` passes first.
    func wait(until deadline: DispatchTime) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            lock.lock()
            if let value {
                lock.unlock()
                continuation.resume(returning: value)
                return
            }
            let id = nextWaiter
            nextWaiter += 1
            waiters[id] = continuation
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
                // Each continuation is resumed exactly once: by whichever of the value and the
                // deadline takes it out of the table first.
                lock.lock()
                let expired = waiters.removeValue(forKey: id)
                lock.unlock()
                expired?.resume(returning: nil)
            }
        }
    }
}
