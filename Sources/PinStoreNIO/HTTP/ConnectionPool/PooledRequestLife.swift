/// The life of one request inside ``PinnedConnectionPool``, as a plain value: waiting for a
/// connection, leased to one, running on it, or cancelled. Events in, what to do out; no
/// channel, no lock. The pool's `PooledRequest` keeps it behind one lock (it was four locked
/// fields, each an allocation and a lock of its own on every request: issue 33) and does what it
/// answers after the lock.
///
/// The point of it is cancellation, which can come from any thread at any moment: a request
/// cancelled while it waits leaves the pool's queue; one cancelled after its lease, before its
/// control arrived, is aborted by that control's arrival (or refused at the write, where the
/// pool checks ``isCancelled``); one running is aborted through its control; and a cancelled
/// request is never retried.
struct PooledRequestLife: Sendable {
    typealias RequestID = PinnedConnectionPoolStateMachine.RequestID

    private enum State {
        /// Not with the pool: just made, or about to be submitted again for its one retry.
        case created
        /// In the pool's queue under this ID.
        case waiting(RequestID)
        /// Leased to a connection; its control has not arrived yet.
        case leased
        /// Written (or being written), steered through its control.
        case running(PinnedRequestControl)
        case cancelled
    }

    private var state = State.created

    /// What a cancellation asks of the pool.
    enum Cancellation {
        /// Nothing now: not yet submitted, leased (its control or its write will see the
        /// cancellation), or already cancelled.
        case nothing
        /// Take it out of the pool's queue (it fails there with `.cancelled`).
        case removeFromQueue(RequestID)
        /// Abort it on its connection.
        case abort(PinnedRequestControl)
    }

    var isCancelled: Bool {
        if case .cancelled = state { return true }
        return false
    }

    /// The control of a running request (to resume reading after backpressure).
    var control: PinnedRequestControl? {
        if case .running(let control) = state { return control }
        return nil
    }

    /// The pool queued it under `id` (a cancelled request stays cancelled: its lease fails it).
    mutating func submitted(as id: RequestID) {
        guard !isCancelled else { return }
        state = .waiting(id)
    }

    /// The pool leased it to a connection (under the pool's lock).
    mutating func leased() {
        guard !isCancelled else { return }
        state = .leased
    }

    /// Its connection handed over the control; true when the request must be aborted at once
    /// (it was cancelled meanwhile).
    mutating func controlArrived(_ control: PinnedRequestControl) -> Bool {
        guard !isCancelled else { return true }
        state = .running(control)
        return false
    }

    mutating func cancel() -> Cancellation {
        let previous = state
        state = .cancelled
        switch previous {
        case .created, .leased, .cancelled: return .nothing
        case .waiting(let id): return .removeFromQueue(id)
        case .running(let control): return .abort(control)
        }
    }

    /// Its reused connection turned out closed: true when it may be submitted again (it was
    /// not cancelled); it is then as new.
    mutating func retry() -> Bool {
        guard !isCancelled else { return false }
        state = .created
        return true
    }
}
