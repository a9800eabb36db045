import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import PinStore

/// Keep-alive connections for one pinning configuration, keyed by host and port.
///
/// The decisions live in ``PinnedConnectionPoolStateMachine``; this class holds it under a lock,
/// turns its actions into effects while still under the lock, and runs them after
/// (`modifyStateAndRunEffects`). Every connection in the pool was admitted by the pin check for
/// the host it serves; when the store's list changes, connections whose kept chain is no longer
/// pinned for their host are retired before any further request is written to them.
///
/// A request is leased to a connection under the pool's lock, but written later, on the
/// connection's event loop: a list installed in between is caught at the write itself
/// (``WriteGate``), so no request is written on a connection after a list that withdrew its
/// pin is in force.
final class PinnedConnectionPool: Sendable {
    typealias Key = PinnedConnectionPoolStateMachine.Key

    /// Limits and timeouts.
    struct Configuration: Sendable {
        /// Connections per host and port (URLSession's `httpMaximumConnectionsPerHost`).
        var maximumConnectionsPerHost = 6
        /// An idle connection closes after this long.
        var idleTimeout: TimeAmount = .seconds(60)
    }

    /// One request as the pool carries it.
    struct Request: Sendable {
        var key: Key
        var head: HTTPRequestHead
        var body: ByteBuffer?
        /// Connecting, the handshake, and each silence while waiting for the response.
        var timeout: TimeAmount
        /// Whether the method may be repeated (GET, HEAD, PUT, DELETE, OPTIONS, TRACE).
        var isIdempotent: Bool { [.GET, .HEAD, .PUT, .DELETE, .OPTIONS, .TRACE].contains(head.method) }
    }

    private struct State {
        var machine: PinnedConnectionPoolStateMachine
        var requests: [Int: PooledRequest] = [:]
        var connections: [Int: PinnedConnection] = [:]
        var connectFailures: [Int: PinnedHTTPFailure] = [:]
        var nextRequestID = 1
        /// The store's list generation the established connections were last checked against.
        var checkedGeneration: UInt64
        /// Each established connection's admission gate: what it was admitted with, and the list
        /// generation it was last found pinned under (its handshake's, or that of a later check
        /// under one generation: as it joined the pool, after a list change, at a write). A
        /// connection whose pin was withdrawn leaves this table (it only finishes what was
        /// already written on it), so a late write on it is refused.
        var gates: [Int: AdmissionGate] = [:]
        /// Who hears of every write (tests); nil, the default, costs one check per request.
        var writeObserver: (@Sendable (PooledWrite) -> Void)?
    }

    /// One request about to be written on a pooled connection, as ``observeWrites(_:)`` hears
    /// of it: after the write gate let it through, before the first byte is written.
    package struct PooledWrite: Sendable {
        /// The connection the request is written on.
        package let connectionID: Int
        /// The host the connection serves.
        package let host: HostName
        /// The store's list generation (``PinStore/listGeneration``) the write was allowed
        /// under: read at the write, and the same before and after any re-check of the pins.
        package let generation: UInt64
        /// The list generation the connection was last found pinned under: its handshake's, or
        /// that of the last check under one generation that found it still pinned (as it joined
        /// the pool, after a list change, or at a write).
        package let admittedUnder: UInt64
        /// Whether a list was installed between the lease and the write, so that the
        /// connection was checked again at the write (the window the live race tests aim at).
        package let recheckedAtWrite: Bool
    }

    let configuration: Configuration
    private let verifier: PinningTLSVerifier
    private let context: Result<NIOSSLContext, PinnedHTTPFailure>
    private let group: any EventLoopGroup
    private let state: Locked<State>
    private let listChangeToken = Locked<UInt64?>(nil)

    private var store: PinStore { verifier.evaluator.store }

    /// The per-request objects alive (``LiveRequestObjects``): its own, or its transport's.
    let liveObjects: LiveRequestObjects

    init(configuration: Configuration, verifier: PinningTLSVerifier, context: Result<NIOSSLContext, PinnedHTTPFailure>,
         group: any EventLoopGroup, liveObjects: LiveRequestObjects = LiveRequestObjects()) {
        self.liveObjects = liveObjects
        self.configuration = configuration
        self.verifier = verifier
        self.context = context
        self.group = group
        self.state = Locked(State(machine: PinnedConnectionPoolStateMachine(maximumConnectionsPerKey: configuration.maximumConnectionsPerHost),
                                  checkedGeneration: verifier.evaluator.store.listGeneration))
        let token = verifier.evaluator.store.addListChangeHandler { [weak self] in
            self?.pinsChanged()
        }
        listChangeToken.withLock { $0 = token }
    }

    deinit {
        if let token = listChangeToken.withLock({ $0 }) {
            store.removeListChangeHandler(token)
        }
    }

    /// A handle on a submitted request.
    ///
    /// It does not keep the request alive: the pool holds a waiting request and its connection
    /// a running one, and once the request has ended there is nothing left to cancel or resume.
    /// Whoever may cancel keeps a ticket (the URL protocol, the hop's receiver, the resource
    /// deadline), and the request keeps that receiver: a strong ticket closed the cycle request
    /// -> receiver -> ticket -> request, and every request ever made stayed in memory with its
    /// response and body (issue 37).
    struct Ticket: Sendable {
        fileprivate weak var request: PooledRequest?
        fileprivate let pool: PinnedConnectionPool

        /// Ends the request: a waiting one fails at once, a running one is aborted (its
        /// connection closes, since its state is unknown). Does nothing once it has ended.
        func cancel() {
            guard let request else { return }
            pool.cancel(request)
        }

        /// Lets a paused response read on.
        func resumeReading() {
            request?.life.withLock { $0.control }?.resumeReading()
        }
    }

    /// Submits `request`; `receiver` hears the response (or the failure). A request on a reused
    /// connection that the server had closed is retried once on a fresh connection when
    /// idempotent.
    func execute(_ request: Request, receiver: any PinnedResponseReceiver) -> Ticket {
        // A request on a pooled connection makes no pin check: keep the store on its schedule.
        store.noteUse()
        let pooled = PooledRequest(request: request, receiver: receiver, liveObjects: liveObjects)
        submit(pooled, needsFreshConnection: false)
        return Ticket(request: pooled, pool: self)
    }

    /// Closes idle connections and fails waiting requests; busy connections close when done.
    func shutDown() {
        modifyStateAndRunEffects { $0.machine.shutDown() }
    }

    /// Connections open or opening for `key` (for tests).
    func connectionCount(for key: Key) -> Int {
        state.withLock { $0.machine.connectionCount(for: key) }
    }

    /// Requests the pool still holds (waiting for a connection), and connection failures not
    /// yet handed to a request: both zero once every request has ended (for tests).
    var heldRequestCount: (waiting: Int, undeliveredFailures: Int) {
        state.withLock { ($0.requests.count, $0.connectFailures.count) }
    }

    /// Calls `observer` for every request leased from now on, at its write on a pooled
    /// connection (on that connection's event loop; keep it short). For the live race tests:
    /// what list generation each write happened under. `nil` stops observing. Requests leased
    /// before the call are not reported.
    package func observeWrites(_ observer: (@Sendable (PooledWrite) -> Void)?) {
        state.withLock { $0.writeObserver = observer }
    }

    // MARK: Events

    fileprivate func submit(_ pooled: PooledRequest, needsFreshConnection: Bool) {
        modifyStateAndRunEffects { state in
            var actions = recheckPinsIfListChanged(&state)
            let id = state.nextRequestID
            state.nextRequestID += 1
            pooled.life.withLock { $0.submitted(as: id) }
            state.requests[id] = pooled
            actions += state.machine.executeRequest(id, key: pooled.request.key, needsFreshConnection: needsFreshConnection)
            return actions
        }
    }

    private func cancel(_ pooled: PooledRequest) {
        switch pooled.life.withLock({ $0.cancel() }) {
        case .nothing:
            // Not yet queued, or leased: its lease or its control sees the cancellation.
            break
        case .removeFromQueue(let id):
            modifyStateAndRunEffects { $0.machine.cancelRequest(id) }
        case .abort(let control):
            control.abort(.cancelled)
        }
    }

    private func pinsChanged() {
        modifyStateAndRunEffects { state in
            var actions = recheckPinsIfListChanged(&state)
            // The handler may run after a lease already saw the new generation; check anyway.
            if actions.isEmpty { actions = recheckPins(&state) }
            return actions
        }
    }

    /// `admittedUnder`: the list generation read before the connection's handshake (and so its
    /// pin check) began. Comparing with the pool's `checkedGeneration` instead is not enough: a
    /// request that arrived meanwhile may already have moved that to the new generation, and a
    /// connection whose chain the old list admitted would then join the pool unchecked (the live
    /// pool race test saw it).
    private func connectionEstablished(_ connection: PinnedConnection, admittedUnder: UInt64) {
        modifyStateAndRunEffects { state in
            var gate = AdmissionGate(evidence: connection.admission, admittedUnder: admittedUnder)
            guard store.admit(&gate, host: connection.key.host).verdict == .admit else {
                // Admitted under a list that has changed since, and no longer pinned: refuse
                // it as the pin check would now.
                verifier.logger.debug("new connection no longer pinned after a list change; closed", metadata: [
                    "pinstore.host": "\(connection.key.host)",
                ])
                connection.close()
                return Self.connectionFailed(connection.id, .pinning(PinningFailure(host: connection.key.host.text, reason: .pinMismatch)),
                                             &state)
            }
            state.connections[connection.id] = connection
            state.gates[connection.id] = gate
            return state.machine.connectionEstablished(connection.id, capacity: connection.capacity)
        }
    }

    private func connectionFailed(_ id: Int, _ failure: PinnedHTTPFailure) {
        modifyStateAndRunEffects { Self.connectionFailed(id, failure, &$0) }
    }

    /// The machine's actions for a failed connection; `failure` is kept only when a request
    /// will fail with it. When none does (the requests that waited were cancelled or timed out
    /// meanwhile, or the pool shut down), a failure kept "for later" stayed in the table for
    /// the life of the pool, a mismatch report with it.
    private static func connectionFailed(_ id: Int, _ failure: PinnedHTTPFailure, _ state: inout State) -> [PinnedConnectionPoolStateMachine.Action] {
        let actions = state.machine.connectionFailed(id)
        let delivered = actions.contains { action in
            if case .failRequest(_, .connectionFailed(id)) = action { return true }
            return false
        }
        if delivered { state.connectFailures[id] = failure }
        return actions
    }

    private func requestFinished(on id: Int, reusable: Bool) {
        modifyStateAndRunEffects { $0.machine.requestFinished(on: id, reusable: reusable) }
    }

    private func connectionClosed(_ id: Int) {
        modifyStateAndRunEffects { state in
            let actions = state.machine.connectionClosed(id)
            if state.machine.key(of: id) == nil {
                state.connections[id] = nil
                state.gates[id] = nil
            }
            return actions
        }
    }

    private func idleTimeoutFired(_ id: Int, epoch: Int) {
        modifyStateAndRunEffects { $0.machine.idleTimeoutFired(id, epoch: epoch) }
    }

    // MARK: Pins

    private func recheckPinsIfListChanged(_ state: inout State) -> [PinnedConnectionPoolStateMachine.Action] {
        guard store.listGeneration != state.checkedGeneration else { return [] }
        return recheckPins(&state)
    }

    private func recheckPins(_ state: inout State) -> [PinnedConnectionPoolStateMachine.Action] {
        state.checkedGeneration = store.listGeneration
        var revoked = Set<Int>()
        for id in state.machine.establishedConnections {
            guard var gate = state.gates[id] else { continue }
            if store.admit(&gate).verdict == .admit {
                state.gates[id] = gate
            } else {
                revoked.insert(id)
                state.gates[id] = nil
            }
        }
        guard !revoked.isEmpty else { return [] }
        // Debug: the next request to the host is refused or served by a new connection, and
        // that decision is reported on its own.
        verifier.logger.debug("pooled connections no longer pinned after a list change are retired", metadata: [
            "pinstore.connections.revoked": "\(revoked.count)",
            "pinstore.list.generation": "\(state.checkedGeneration)",
        ])
        return state.machine.pinsChanged(revoked: revoked)
    }

    // MARK: Writes

    /// What a leased request takes to its write: the pool asks at the write, on the
    /// connection's event loop, whether the connection may still carry it
    /// (``PinnedConnectionPool/admitWrite(_:)``).
    struct WriteGate: Sendable {
        fileprivate let pool: PinnedConnectionPool
        fileprivate let connection: PinnedConnection
        /// The connection's admission gate as it was when the request was leased: pinned under
        /// the list generation of the pool's last check (or retired, and not leased).
        fileprivate let leased: AdmissionGate
        fileprivate let observer: (@Sendable (PooledWrite) -> Void)?

        /// Nil when the request may be written now; the failure to end it with otherwise.
        func admit() -> PinnedHTTPFailure? { pool.admitWrite(self) }
    }

    /// The last check before a request's first byte. When the store's generation is still the
    /// one the lease saw the connection pinned under, nothing changed (one lock and a clock
    /// read, no pool lock). Otherwise a list was installed between the lease and the write, and
    /// the pool's own re-check (the list-change handler) may not have run yet, or ran after
    /// this request was leased: the connection's gate is run here, under the pool's lock, and
    /// a connection whose pin that list withdrew carries nothing more.
    private func admitWrite(_ write: WriteGate) -> PinnedHTTPFailure? {
        let id = write.connection.id
        var generation = store.listGeneration
        var pinnedUnder = write.leased.pinnedUnder ?? generation
        let rechecked = write.leased.verdict(at: generation, for: write.connection.key.host) != .admit
        if rechecked {
            var refused = false
            modifyStateAndRunEffects { state in
                // Absent: already retired for its pins.
                guard var gate = state.gates[id] else {
                    refused = true
                    return []
                }
                let outcome = store.admit(&gate, host: write.connection.key.host)
                if outcome.verdict == .admit, let under = gate.pinnedUnder {
                    state.gates[id] = gate
                    generation = outcome.generation
                    pinnedUnder = under
                    return []
                }
                refused = true
                state.gates[id] = nil
                // Retired now rather than when the list-change handler gets here: no other
                // request is leased to it meanwhile.
                return state.machine.pinsChanged(revoked: [id])
            }
            if refused {
                verifier.logger.debug("a request leased before a list change was not written: the connection is no longer pinned", metadata: [
                    "pinstore.host": "\(write.connection.key.host)",
                ])
                return .pinning(PinningFailure(host: write.connection.key.host.text, reason: .pinMismatch))
            }
        }
        write.observer?(PooledWrite(connectionID: id, host: write.connection.key.host,
                                    generation: generation, admittedUnder: pinnedUnder,
                                    recheckedAtWrite: rechecked))
        return nil
    }

    // MARK: Running actions

    private enum Effect {
        case create(Int, Key, timeout: TimeAmount)
        case execute(PooledRequest, PinnedConnection, reused: Bool, WriteGate)
        case fail(PooledRequest, PinnedHTTPFailure)
        case close(PinnedConnection?)
        case scheduleIdleTimeout(PinnedConnection, epoch: Int)
    }

    /// Changes the state under the lock, turns the actions into effects there, runs them after.
    private func modifyStateAndRunEffects(_ body: (inout State) -> [PinnedConnectionPoolStateMachine.Action]) {
        let effects: [Effect] = state.withLock { state in
            let actions = body(&state)
            return actions.compactMap { action -> Effect? in
                switch action {
                case .createConnection(let id, let key):
                    // The first request waiting for the key sets the timeout.
                    let timeout = state.requests.values.first { $0.request.key == key }?.request.timeout ?? .seconds(60)
                    return .create(id, key, timeout: timeout)
                case .execute(let requestID, let connectionID, let reused):
                    guard let request = state.requests.removeValue(forKey: requestID) else { return nil }
                    guard let connection = state.connections[connectionID] else {
                        // Cannot happen while the machine and the table agree; fail rather than hang.
                        return .fail(request, .connectionLost("The pooled connection was gone before the request was written."))
                    }
                    request.life.withLock { $0.leased() }
                    // A connection without a gate was retired: the write refuses.
                    var leased = state.gates[connectionID] ?? AdmissionGate(evidence: connection.admission, admittedUnder: 0)
                    if state.gates[connectionID] == nil { leased.refuse() }
                    let gate = WriteGate(pool: self, connection: connection, leased: leased, observer: state.writeObserver)
                    return .execute(request, connection, reused: reused, gate)
                case .failRequest(let requestID, let reason):
                    guard let request = state.requests.removeValue(forKey: requestID) else { return nil }
                    switch reason {
                    case .cancelled: return .fail(request, .cancelled)
                    case .shutDown: return .fail(request, .cancelled)
                    case .connectionFailed(let id):
                        return .fail(request, state.connectFailures.removeValue(forKey: id) ?? .connectionLost("The connection failed."))
                    }
                case .closeConnection(let id):
                    state.gates[id] = nil
                    return .close(state.connections.removeValue(forKey: id))
                case .scheduleIdleTimeout(let id, let epoch):
                    guard let connection = state.connections[id] else { return nil }
                    return .scheduleIdleTimeout(connection, epoch: epoch)
                }
            }
        }
        for effect in effects {
            run(effect)
        }
    }

    private func run(_ effect: Effect) {
        switch effect {
        case .create(let id, let key, let timeout):
            let context: NIOSSLContext
            switch self.context {
            case .success(let made): context = made
            case .failure(let failure):
                connectionFailed(id, failure)
                return
            }
            // Before the handshake: a list installed after this read is checked for again
            // once the connection is up.
            let admittedUnder = store.listGeneration
            let events = PinnedConnection.Events(
                requestFinished: { [weak self] reusable in self?.requestFinished(on: id, reusable: reusable) },
                closed: { [weak self] in self?.connectionClosed(id) })
            PinnedConnection.connect(id: id, key: key, verifier: verifier, context: context, eventLoop: group.next(),
                                     timeout: timeout, events: events,
                                     streamEnded: { [weak self] in self?.requestFinished(on: id, reusable: true) }).whenComplete { [weak self] result in
                switch result {
                case .success(let connection): self?.connectionEstablished(connection, admittedUnder: admittedUnder)
                case .failure(let error): self?.connectionFailed(id, PinnedHTTPFailure.classify(error, decision: nil))
                }
            }
        case .execute(let request, let connection, let reused, let gate):
            if request.life.withLock({ $0.isCancelled }) {
                // Cancelled while the lease was being made: the connection's state is still clean.
                request.receiver.fail(.cancelled, afterResponseBytes: false)
                requestFinished(on: connection.id, reusable: true)
                return
            }
            request.reused = reused
            request.pool = self
            connection.execute(head: request.request.head, body: request.request.body, silenceTimeout: request.request.timeout,
                               receiver: request, gate: gate) { control in
                if request.life.withLock({ $0.controlArrived(control) }) { control.abort(.cancelled) }
            }
        case .fail(let request, let failure):
            request.receiver.fail(failure, afterResponseBytes: false)
        case .close(let connection):
            connection?.close()
        case .scheduleIdleTimeout(let connection, let epoch):
            let timeout = configuration.idleTimeout
            connection.channel.eventLoop.scheduleTask(in: timeout) { [weak self] in
                self?.idleTimeoutFired(connection.id, epoch: epoch)
            }
        }
    }
}

/// A request inside the pool: forwards the response to the caller's receiver, and retries once
/// on a fresh connection when a reused one turns out closed before any response byte.
private final class PooledRequest: PinnedResponseReceiver, @unchecked Sendable {
    // @unchecked: `request` and `receiver` are immutable; `reused`, `retried` and `pool` are
    // set before the request is written and read on that connection's event loop only; `life`
    // is locked.
    let request: PinnedConnectionPool.Request
    let receiver: any PinnedResponseReceiver
    /// Where it is (queued, leased, running) and whether it was cancelled: one lock.
    let life = Locked(PooledRequestLife())
    var reused = false
    var retried = false
    weak var pool: PinnedConnectionPool?
    private let liveObjects: LiveRequestObjects

    init(request: PinnedConnectionPool.Request, receiver: any PinnedResponseReceiver, liveObjects: LiveRequestObjects) {
        self.request = request
        self.receiver = receiver
        self.liveObjects = liveObjects
        liveObjects.made(.pooledRequest)
    }

    deinit {
        liveObjects.freed(.pooledRequest)
    }

    func receiveHead(_ head: HTTPResponseHead) { receiver.receiveHead(head) }
    func receiveBodyPart(_ part: ByteBuffer) -> Bool { receiver.receiveBodyPart(part) }
    func receiveEnd() { receiver.receiveEnd() }

    func fail(_ failure: PinnedHTTPFailure, afterResponseBytes: Bool) {
        if case .connectionLost = failure, reused, !retried, !afterResponseBytes, request.isIdempotent, let pool,
           life.withLock({ $0.retry() }) {
            retried = true
            pool.submit(self, needsFreshConnection: true)
            return
        }
        receiver.fail(failure, afterResponseBytes: afterResponseBytes)
    }
}
