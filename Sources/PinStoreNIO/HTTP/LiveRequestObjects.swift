import Atomics

/// How many of each per-request object of one pinned transport are alive.
///
/// A pinned URLSession serves a process for weeks: anything a request leaves behind adds up
/// (issue 37: a reference cycle between a finished request, its receiver and its ticket kept
/// about 6.5 KB per request). Each per-request type counts itself here as it is made and freed,
/// so a test can make requests through a real server, end them every way a request can end, and
/// see every count come back to zero: it counts objects, it does not time anything.
///
/// One counter per transport (and pool), not one per process: tests run side by side, each
/// with its own pinned session. The cost is one relaxed atomic add when an object is made and
/// one when it is freed.
package final class LiveRequestObjects: Sendable {
    /// The per-request objects counted.
    package enum Kind: Int, CaseIterable, Sendable, CustomStringConvertible {
        /// The `URLProtocol` corelibs makes for each task (counted from `startLoading`).
        case urlProtocol
        /// The pool's record of one request (one per hop, retries included).
        case pooledRequest
        /// The transport's receiver of one hop's response.
        case hopReceiver
        /// The outcome of one hop, which a callback or a task waits for.
        case hopOutcome
        /// The resource timeout of one load.
        case resourceDeadline

        package var description: String {
            switch self {
            case .urlProtocol: "URLProtocol"
            case .pooledRequest: "PooledRequest"
            case .hopReceiver: "HopReceiver"
            case .hopOutcome: "HopOutcome"
            case .resourceDeadline: "ResourceDeadline"
            }
        }
    }

    private let counts: [ManagedAtomic<Int>] = Kind.allCases.map { _ in ManagedAtomic(0) }

    package init() {}

    func made(_ kind: Kind) {
        counts[kind.rawValue].wrappingIncrement(ordering: .relaxed)
    }

    func freed(_ kind: Kind) {
        counts[kind.rawValue].wrappingDecrement(ordering: .relaxed)
    }

    /// The objects of `kind` alive now.
    package func live(_ kind: Kind) -> Int {
        counts[kind.rawValue].load(ordering: .relaxed)
    }

    /// Every kind with objects alive now, and how many (empty when none are).
    package var alive: [Kind: Int] {
        var result: [Kind: Int] = [:]
        for kind in Kind.allCases where live(kind) != 0 {
            result[kind] = live(kind)
        }
        return result
    }
}
