import PinStore

/// The pool's decisions, as a plain value: events in, actions out. No channel, no clock, no
/// lock: ``PinnedConnectionPool`` feeds it under its lock and runs the actions after.
///
/// The invariants the security argument rests on, each unit-tested without sockets:
/// - a connection serves only the key (host and port) it was opened and pin-checked for;
/// - after ``pinsChanged(revoked:)`` a revoked connection carries no further request;
/// - at most ``maximumConnectionsPerKey`` connections per key; requests beyond wait in FIFO order;
/// - an HTTP/1.1 connection carries one request at a time, an HTTP/2 one up to its capacity
///   (concurrent streams); until a key is known to speak HTTP/1.1, one connection at a time is
///   opened for it;
/// - a request that needs a fresh connection (the retry after a stale idle one) never gets a
///   connection that served before.
struct PinnedConnectionPoolStateMachine: Sendable {
    /// What a connection is for: the host it was verified for, made once at the transport's
    /// edge (so `API.Example.com.` and `api.example.com`, `[::1]` and `::1`, are one key), and
    /// the port. The scheme is always https: the pool never carries anything else.
    struct Key: Hashable, Sendable, CustomStringConvertible {
        var host: HostName
        var port: Int
        var description: String { host.isIPAddress && host.text.contains(":") ? "https://[\(host)]:\(port)" : "https://\(host):\(port)" }
    }

    typealias ConnectionID = Int
    typealias RequestID = Int

    /// What the pool must do.
    enum Action: Equatable, Sendable {
        /// Open (connect, handshake, pin check) a connection for `key`.
        case createConnection(ConnectionID, Key)
        /// Write the request on the connection; `reused` when it served a request before.
        case execute(RequestID, on: ConnectionID, reused: Bool)
        /// Fail a waiting request.
        case failRequest(RequestID, Failure)
        /// Close the connection (it is already out of the machine).
        case closeConnection(ConnectionID)
        /// Call ``idleTimeoutFired(_:epoch:)`` after the idle timeout.
        case scheduleIdleTimeout(ConnectionID, epoch: Int)
    }

    /// Why a waiting request fails.
    enum Failure: Equatable, Sendable {
        /// The request was cancelled while it waited.
        case cancelled
        /// The connection opened for it failed (the pool knows the error).
        case connectionFailed(ConnectionID)
        /// The pool shut down.
        case shutDown
    }

    private enum ConnectionState: Equatable {
        case connecting
        case idle(epoch: Int)
        /// Carrying `active` requests (at most the connection's capacity).
        case busy(active: Int)
        /// Carrying `active` requests, and closes when they are done instead of serving more.
        case retiring(active: Int)
    }

    private struct Connection {
        var key: Key
        var state: ConnectionState
        var served = 0
        /// Requests it may carry at once: 1 for HTTP/1.1, the stream limit for HTTP/2.
        var capacity = 1
        /// Whether an idle timer is pending: one at a time per connection, however many
        /// requests it serves (a timer per request would pile up at thousands per second).
        var timerArmed = false

        var hasRoom: Bool {
            switch state {
            case .idle: true
            case .busy(let active): active < capacity
            case .connecting, .retiring: false
            }
        }
    }

    private struct Waiting {
        var request: RequestID
        var key: Key
        var needsFreshConnection: Bool
    }

    let maximumConnectionsPerKey: Int
    private var connections: [ConnectionID: Connection] = [:]
    private var queue: [Waiting] = []
    /// What each key's server spoke, once a connection to it was established: true for HTTP/2
    /// (one connection carries many requests), false for HTTP/1.1. Until it is known, one
    /// connection at a time is opened, so an HTTP/2 server is not sent a burst of handshakes.
    private var multiplexing: [Key: Bool] = [:]
    private var nextConnectionID = 1
    private var nextEpoch = 1
    private var isShutDown = false

    init(maximumConnectionsPerKey: Int) {
        self.maximumConnectionsPerKey = max(1, maximumConnectionsPerKey)
    }

    // MARK: Events

    /// A new request for `key`. `needsFreshConnection` for the one retry after a reused
    /// connection turned out closed.
    mutating func executeRequest(_ request: RequestID, key: Key, needsFreshConnection: Bool = false) -> [Action] {
        guard !isShutDown else { return [.failRequest(request, .shutDown)] }
        queue.append(Waiting(request: request, key: key, needsFreshConnection: needsFreshConnection))
        return balance(key)
    }

    /// The connection is up and admitted by the pin check; `capacity` is how many requests it
    /// may carry at once (1 for HTTP/1.1, the stream limit for HTTP/2).
    mutating func connectionEstablished(_ id: ConnectionID, capacity: Int = 1) -> [Action] {
        guard let connection = connections[id], connection.state == .connecting else { return [] }
        connections[id]?.capacity = max(1, capacity)
        multiplexing[connection.key] = capacity > 1
        var actions: [Action] = []
        var active = 0
        while active < max(1, capacity), let index = queue.firstIndex(where: { $0.key == connection.key }) {
            let waiting = queue.remove(at: index)
            actions.append(.execute(waiting.request, on: id, reused: active > 0))
            active += 1
        }
        guard active > 0 else { return park(id) }
        connections[id]?.state = .busy(active: active)
        connections[id]?.served += active
        return actions + balance(connection.key)
    }

    /// Connecting failed (refused, unreachable, pin check). The oldest request waiting for its
    /// key fails with that error; the others get another try.
    mutating func connectionFailed(_ id: ConnectionID) -> [Action] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        var actions: [Action] = []
        if let index = queue.firstIndex(where: { $0.key == connection.key }) {
            actions.append(.failRequest(queue.remove(at: index).request, .connectionFailed(id)))
        }
        return actions + balance(connection.key)
    }

    /// A request on `id` is done; `reusable` when the connection may carry more (keep-alive
    /// holds and the body was read to its end).
    mutating func requestFinished(on id: ConnectionID, reusable: Bool) -> [Action] {
        guard let connection = connections[id] else { return [] }
        switch connection.state {
        case .busy(let active) where reusable:
            var current = active - 1
            var actions: [Action] = []
            while current < connection.capacity,
                  let index = queue.firstIndex(where: { $0.key == connection.key && !$0.needsFreshConnection }) {
                let waiting = queue.remove(at: index)
                current += 1
                connections[id]?.served += 1
                actions.append(.execute(waiting.request, on: id, reused: true))
            }
            if current == 0 {
                actions += park(id)
            } else {
                connections[id]?.state = .busy(active: current)
            }
            return actions + balance(connection.key)
        case .busy(let active), .retiring(let active):
            if active > 1 {
                // Its other requests finish first; it takes no new one.
                connections[id]?.state = .retiring(active: active - 1)
                return balance(connection.key)
            }
            connections[id] = nil
            return [.closeConnection(id)] + balance(connection.key)
        case .connecting, .idle:
            return []
        }
    }

    /// The channel closed (by the server, or after an error), in whatever state it was.
    mutating func connectionClosed(_ id: ConnectionID) -> [Action] {
        // A connection still connecting is reported by ``connectionFailed(_:)``.
        guard let connection = connections[id], connection.state != .connecting else { return [] }
        connections[id] = nil
        return balance(connection.key)
    }

    /// The idle timer scheduled with `epoch` went off. A connection idle since that timer was
    /// set closes; one that served in between and is idle again gets a timer for its new idle
    /// period (so it closes between one and two timeouts after its last request).
    mutating func idleTimeoutFired(_ id: ConnectionID, epoch: Int) -> [Action] {
        guard let connection = connections[id] else { return [] }
        connections[id]?.timerArmed = false
        switch connection.state {
        case .idle(epoch: epoch):
            connections[id] = nil
            return [.closeConnection(id)]
        case .idle(let newer):
            connections[id]?.timerArmed = true
            return [.scheduleIdleTimeout(id, epoch: newer)]
        case .connecting, .busy, .retiring:
            return []
        }
    }

    /// A request gave up. Only a waiting one is the machine's business; one already written is
    /// ended by its connection.
    mutating func cancelRequest(_ request: RequestID) -> [Action] {
        guard let index = queue.firstIndex(where: { $0.request == request }) else { return [] }
        queue.remove(at: index)
        return [.failRequest(request, .cancelled)]
    }

    /// The list in force changed and the connections in `revoked` are no longer pinned for their
    /// host: idle ones close now, busy ones after their current request. A connection still
    /// connecting is checked by the pool when it comes up.
    mutating func pinsChanged(revoked: Set<ConnectionID>) -> [Action] {
        var actions: [Action] = []
        for id in revoked.sorted() {
            guard let connection = connections[id] else { continue }
            switch connection.state {
            case .idle:
                connections[id] = nil
                actions.append(.closeConnection(id))
            case .busy(let active):
                connections[id]?.state = .retiring(active: active)
            case .retiring, .connecting:
                break
            }
        }
        return actions
    }

    /// Fails every waiting request and closes every idle connection; busy ones close when done.
    mutating func shutDown() -> [Action] {
        isShutDown = true
        var actions = queue.map { Action.failRequest($0.request, .shutDown) }
        queue.removeAll()
        for (id, connection) in connections.sorted(by: { $0.key < $1.key }) {
            switch connection.state {
            case .idle:
                connections[id] = nil
                actions.append(.closeConnection(id))
            case .busy(let active):
                connections[id]?.state = .retiring(active: active)
            case .connecting, .retiring:
                break
            }
        }
        return actions
    }

    // MARK: Queries (for the pool and the tests)

    /// The connections open or opening for `key`.
    func connectionCount(for key: Key) -> Int {
        connections.values.reduce(0) { $0 + ($1.key == key ? 1 : 0) }
    }

    /// The key a connection serves.
    func key(of id: ConnectionID) -> Key? { connections[id]?.key }

    /// Requests waiting for a connection.
    var waitingCount: Int { queue.count }

    /// Connections that have passed the pin check (idle or busy), for the pins re-check.
    var establishedConnections: [ConnectionID] {
        connections.filter { $0.value.state != .connecting }.map(\.key).sorted()
    }

    // MARK: Internals

    private mutating func park(_ id: ConnectionID) -> [Action] {
        let epoch = nextEpoch
        nextEpoch += 1
        connections[id]?.state = .idle(epoch: epoch)
        guard connections[id]?.timerArmed == false else { return [] }
        connections[id]?.timerArmed = true
        return [.scheduleIdleTimeout(id, epoch: epoch)]
    }

    /// Serves waiting requests for `key` from connections with room, then opens connections for
    /// the rest, within the limit (closing idle ones that only fresh-connection requests could use).
    private mutating func balance(_ key: Key) -> [Action] {
        var actions: [Action] = []
        // Connections with room first, to the oldest requests that may reuse one.
        var index = 0
        while index < queue.count {
            let waiting = queue[index]
            guard waiting.key == key, !waiting.needsFreshConnection, let available = lowestConnection(for: key, where: \.hasRoom) else {
                index += 1
                continue
            }
            queue.remove(at: index)
            let active = Self.active(connections[available]?.state)
            connections[available]?.state = .busy(active: active + 1)
            connections[available]?.served += 1
            actions.append(.execute(waiting.request, on: available, reused: true))
        }
        // Counted in place: this runs for every request, and filtered copies of the queue and
        // the connections cost allocations each time (issue 33).
        var waitingCount = 0
        var waitingForFresh = 0
        for waiting in queue where waiting.key == key {
            waitingCount += 1
            if waiting.needsFreshConnection { waitingForFresh += 1 }
        }
        guard waitingCount > 0 else { return actions }
        var connecting = 0
        for connection in connections.values where connection.key == key && connection.state == .connecting {
            connecting += 1
        }
        // For an HTTP/2 server (or one not yet known) one connection carries many requests: open
        // one at a time (and a fresh one for a retry).
        let wanted = multiplexing[key] == false ? waitingCount : min(waitingCount, max(1, waitingForFresh))
        while connecting < wanted {
            if connectionCount(for: key) >= maximumConnectionsPerKey {
                // Make room only by closing an idle connection nobody waiting can use.
                guard let idle = lowestConnection(for: key, where: { Self.isIdle($0.state) }) else { break }
                connections[idle] = nil
                actions.append(.closeConnection(idle))
            }
            let id = nextConnectionID
            nextConnectionID += 1
            connections[id] = Connection(key: key, state: .connecting)
            actions.append(.createConnection(id, key))
            connecting += 1
        }
        return actions
    }

    /// The connection with the lowest ID (the oldest) for `key` that `matches`.
    private func lowestConnection(for key: Key, where matches: (Connection) -> Bool) -> ConnectionID? {
        var lowest: ConnectionID?
        for (id, connection) in connections where connection.key == key && matches(connection) && id < (lowest ?? .max) {
            lowest = id
        }
        return lowest
    }

    private static func isIdle(_ state: ConnectionState) -> Bool {
        if case .idle = state { return true }
        return false
    }

    private static func active(_ state: ConnectionState?) -> Int {
        switch state {
        case .busy(let active)?, .retiring(let active)?: active
        default: 0
        }
    }
}
