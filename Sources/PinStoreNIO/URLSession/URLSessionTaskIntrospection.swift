#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking
import PinStore

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
        workQueue = Self.value(Self.property("workQueue", of: task), as: DispatchQueue.self) ?? Self.fallbackQueue
        let session = Self.value(Self.property("session", of: task), as: URLSession.self)
        self.session = session
        var reports = false
        // Without a data delegate nothing can be streamed to: the registry need not be read.
        if let session, session.delegate is URLSessionDataDelegate, let registry = Self.property("taskRegistry", of: session),
           let behaviours = Self.property("behaviours", of: registry) as? [Int: Any],
           let behaviour = behaviours[task.taskIdentifier] {
            reports = String(describing: behaviour) == "callDelegate"
        }
        reportsToSessionDelegate = reports
        // Only upload tasks keep a body outside the request (a data task's `knownBody` is made
        // from the request's own `httpBody` or `httpBodyStream`).
        guard task is URLSessionUploadTask else {
            uploadBody = nil
            return
        }
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

    /// Where a stored property was found in a type's reflection: superclass steps up, then the
    /// child's position. Reflection decodes the type of every child it walks past (the most
    /// expensive part of a request once it ran per property per request), so the position is
    /// found once per type and then read directly, its label checked every time.
    private struct FieldKey: Hashable {
        let type: ObjectIdentifier
        let label: String
    }

    private struct FieldPath {
        let level: Int
        let offset: Int
    }

    private static let fieldPaths = Locked<[FieldKey: FieldPath]>([:])

    private static func property(_ label: String, of subject: Any) -> Any? {
        let key = FieldKey(type: ObjectIdentifier(type(of: subject)), label: label)
        if let path = fieldPaths.withLock({ $0[key] }) {
            var mirror = Mirror(reflecting: subject)
            for _ in 0..<path.level {
                guard let parent = mirror.superclassMirror else { break }
                mirror = parent
            }
            let children = mirror.children
            if path.offset < children.count {
                let child = children[children.index(children.startIndex, offsetBy: path.offset)]
                if child.label == label { return child.value }
            }
        }
        // First time for this type (or the layout was not what was recorded): walk and record.
        var mirror: Mirror? = Mirror(reflecting: subject)
        var level = 0
        while let current = mirror {
            for (offset, child) in current.children.enumerated() where child.label == label {
                fieldPaths.withLock { $0[key] = FieldPath(level: level, offset: offset) }
                return child.value
            }
            mirror = current.superclassMirror
            level += 1
        }
        return nil
    }

    /// `value` as a `T`: a dynamic cast looks through optionals and existentials by itself;
    /// the reflection-based unwrap is the fallback.
    private static func value<T>(_ value: Any?, as type: T.Type) -> T? {
        guard let value else { return nil }
        return value as? T ?? unwrap(value) as? T
    }

    private static func unwrap(_ value: Any?) -> Any? {
        guard let value else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrap($0.value) }
    }
}
#endif
