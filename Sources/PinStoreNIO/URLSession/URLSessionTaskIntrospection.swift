#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking

/// What a URLProtocol on Linux needs to know about its task and cannot ask through public API,
/// read from swift-corelibs-foundation's stored properties with `Mirror` (no writes, no
/// private calls). Every lookup has a safe fallback when a Foundation release renames something.
///
/// Why each one is needed (swift-corelibs-foundation, `URLSessionTask.swift`, `TaskRegistry.swift`):
/// - `workQueue`: corelibs' client callbacks read the session's task registry, which "must only
///   be accessed on the owning session's work queue". Calling them from another thread races
///   with tasks being added and removed: the SIGSEGV in `URLSession.behaviour(for:)` seen under
///   load. Every client call goes through this queue (fallback: one process-wide serial queue).
/// - `session`: its current `configuration` (headers, cookies, timeouts, as the session holds
///   them) and its `delegateQueue` (to see when the delegate has consumed a piece of the body).
/// - the task's registered behaviour: only a task that reports to a session delegate can take
///   its body in pieces; for completion handlers corelibs keeps only the last `didLoad`.
/// - `knownBody`: the body of `uploadTask(with:from:)` / `(fromFile:)`, which corelibs keeps in
///   the task and never puts in the request.
struct URLSessionTaskIntrospection: @unchecked Sendable {
    // @unchecked: the session and queues are thread-safe Foundation objects.
    let workQueue: DispatchQueue
    let session: URLSession?
    /// Whether the task reports to the session's delegate (its body may arrive in pieces).
    let reportsToSessionDelegate: Bool
    /// The body of an upload task, as corelibs keeps it.
    let uploadBody: UploadBody?

    enum UploadBody: Sendable {
        case data(Data)
        case file(URL)
    }

    /// The serial queue client calls take when the task's own queue cannot be found.
    static let fallbackQueue = DispatchQueue(label: "PinStoreNIO.URLProtocolClient")

    /// Must be called on the task's work queue (`startLoading` is), where the registry may be read.
    init(task: URLSessionTask?) {
        guard let task else {
            workQueue = Self.fallbackQueue
            session = nil
            reportsToSessionDelegate = false
            uploadBody = nil
            return
        }
        workQueue = Self.unwrap(Self.property("workQueue", of: task)) as? DispatchQueue ?? Self.fallbackQueue
        let session = Self.unwrap(Self.property("session", of: task)) as? URLSession
        self.session = session
        var reports = false
        if let session, let registry = Self.property("taskRegistry", of: session),
           let behaviours = Self.property("behaviours", of: registry) as? [Int: Any],
           let behaviour = behaviours[task.taskIdentifier] {
            reports = String(describing: behaviour) == "callDelegate" && session.delegate is URLSessionDataDelegate
        }
        reportsToSessionDelegate = reports
        switch Self.unwrap(Self.property("knownBody", of: task)).map({ Mirror(reflecting: $0) })?.children.first {
        case let child? where child.label == "data":
            if let data = child.value as? DispatchData {
                uploadBody = .data(Data(data))
            } else if let data = child.value as? Data {
                uploadBody = .data(data)
            } else {
                uploadBody = nil
            }
        case let child? where child.label == "file":
            uploadBody = (child.value as? URL).map { .file($0) }
        default:
            uploadBody = nil
        }
    }

    private static func property(_ label: String, of subject: Any) -> Any? {
        var mirror: Mirror? = Mirror(reflecting: subject)
        while let current = mirror {
            for child in current.children where child.label == label { return child.value }
            mirror = current.superclassMirror
        }
        return nil
    }

    private static func unwrap(_ value: Any?) -> Any? {
        guard let value else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrap($0.value) }
    }
}
#endif
