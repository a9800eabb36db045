/// The CRL downloads of one store that may run at once: at most ``limit``, the others waiting
/// their turn, first come first served. Every download of a ``CRLChecker`` takes a turn here,
/// whether a handshake or ``PinStore/run()``'s refresh asked for it, so however many
/// distribution points the chains name, the store holds at most ``limit`` connections to CRL
/// servers (before: one a point, all at once; a thousand for one hostile leaf).
final class CRLFetchLimiter: Sendable {
    /// Downloads at once.
    let limit: Int

    private struct State {
        var running = 0
        var nextWaiter = 0
        /// In arrival order.
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    private let state = Locked(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// The downloads running now.
    var running: Int { state.withLock { $0.running } }
    /// The downloads waiting for a turn now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Runs `body` in a turn of its own; nil, without running it, when the task is cancelled
    /// while it waits.
    func withTurn<Result: Sendable>(_ body: () async -> Result) async -> Result? {
        guard await take() else { return nil }
        defer { give() }
        return await body()
    }

    /// Waits for a turn; false when cancelled first.
    private func take() async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // One critical section decides: a free turn is taken, else the waiter queues;
                // a turn given back in between cannot pass it by.
                let answer = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.running < limit {
                        state.running += 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
    }

    /// Ends a turn: the first waiter takes it over, or the count drops.
    private func give() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiters.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
