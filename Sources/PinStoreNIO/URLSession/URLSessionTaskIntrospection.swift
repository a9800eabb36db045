#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking
import PinStore
// `_forEachField`: the offset of a stored property, which `Mirror` does not give.
@_spi(Reflection) import Swift

/// What a URLProtocol on Linux needs to know about its task and cannot ask through public API,
/// read from swift-corelibs-foundation's stored properties (no writes, no private calls). A
/// field that is not where it was (a Foundation release renamed or moved it) is an error, never
/// a guess: the pinned session then refuses the task with a `URLError` and an error log
/// (``URLSessionIntrospectionError``) instead of running it unsafely. The canary test
/// `URLSessionIntrospectionCanaryTests` checks every field on the toolchain in use.
///
/// The fields every task needs (`workQueue`, `session`, and `taskRegistry` for a session with a
/// data delegate) hold object references: each is found once per class, by name, with the
/// runtime's field list, and checked against `Mirror` on that first object (the word at the
/// offset must be the very object reflection reads there, so a weak or unowned reference, or a
/// value, is refused); after that a request reads it at its offset, which costs a load and a
/// retain where a `Mirror` cost about 47,000 instructions a request (issue 33). The fields of
/// corelibs' own value types (`behaviours`, `knownBody`) are read with `Mirror`, on the paths
/// that need them only (a data delegate, an upload task).
///
/// Why each one is needed (swift-corelibs-foundation, `URLSessionTask.swift`, `TaskRegistry.swift`):
/// - `workQueue`: corelibs' client callbacks read the session's task registry, which "must only
///   be accessed on the owning session's work queue". Calling them from another thread races
///   with tasks being added and removed: the SIGSEGV in `URLSession.behaviour(for:)` seen under
///   load. Every client call goes through this queue.
/// - `session`: its current `configuration` (headers, cookies, timeouts, as the session holds
///   them) and its `delegateQueue` (to see when the delegate has consumed a piece of the body).
/// - the task's registered behaviour (`taskRegistry.behaviours[taskIdentifier]`), read when the
///   session has a data delegate: only a task that reports to it can take its body in pieces;
///   for completion handlers corelibs keeps only the last `didLoad`.
/// - `knownBody`: the body of `uploadTask(with:from:)` / `(fromFile:)`, which corelibs keeps in
///   the task and never puts in the request.
struct URLSessionTaskIntrospection: @unchecked Sendable {
    // @unchecked: the session and queues are thread-safe Foundation objects.
    let workQueue: DispatchQueue
    let session: URLSession
    /// Whether the task reports to the session's delegate (its body may arrive in pieces).
    let reportsToSessionDelegate: Bool
    /// The body of an upload task, as corelibs keeps it.
    let uploadBody: UploadBody?

    enum UploadBody: Sendable {
        case data(Data)
        case file(URL)
    }

    /// The stored-property names read, as swift-corelibs-foundation spells them. A parameter so
    /// a test can ask for a field that does not exist and see the refusal.
    struct Fields: Sendable {
        var workQueue = "workQueue"
        var session = "session"
        var taskRegistry = "taskRegistry"
        var behaviours = "behaviours"
        var knownBody = "knownBody"

        static let corelibs = Fields()
    }

    /// Must be called on the task's work queue (`startLoading` is), where the registry may be read.
    init(task: URLSessionTask?, fields: Fields = .corelibs) throws(URLSessionIntrospectionError) {
        guard let task else { throw URLSessionIntrospectionError(field: "URLProtocol.task", problem: "is nil") }
        guard let workQueue = try ObjectField.read(fields.workQueue, of: task, in: "URLSessionTask") as? DispatchQueue else {
            throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.workQueue)", problem: "is not a DispatchQueue")
        }
        self.workQueue = workQueue
        guard let session = try ObjectField.read(fields.session, of: task, in: "URLSessionTask") as? URLSession else {
            throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.session)", problem: "is not a URLSession")
        }
        self.session = session
        var reports = false
        // Without a data delegate nothing can be streamed to: the registry need not be read.
        if session.delegate is URLSessionDataDelegate {
            guard let registry = try ObjectField.read(fields.taskRegistry, of: session, in: "URLSession") else {
                throw URLSessionIntrospectionError(field: "URLSession.\(fields.taskRegistry)", problem: "is nil")
            }
            guard let behaviours = Self.unwrap(Self.property(fields.behaviours, of: registry)) as? [Int: Any] else {
                throw URLSessionIntrospectionError(field: "URLSession.\(fields.taskRegistry).\(fields.behaviours)",
                                                   problem: "was not found or is not keyed by task identifier")
            }
            guard let behaviour = behaviours[task.taskIdentifier] else {
                throw URLSessionIntrospectionError(field: "URLSession.\(fields.taskRegistry).\(fields.behaviours)[\(task.taskIdentifier)]",
                                                   problem: "has no entry for the task")
            }
            reports = String(describing: behaviour) == "callDelegate"
        }
        reportsToSessionDelegate = reports
        // Only upload tasks keep a body outside the request (a data task's `knownBody` is made
        // from the request's own `httpBody` or `httpBodyStream`).
        guard task is URLSessionUploadTask else {
            uploadBody = nil
            return
        }
        guard let stored = Self.property(fields.knownBody, of: task) else {
            throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.knownBody)", problem: "was not found")
        }
        // nil, or a case without a payload (`.none`): the task has no body of its own.
        switch Self.unwrap(stored).map({ Mirror(reflecting: $0) })?.children.first {
        case nil:
            uploadBody = nil
        case let child? where child.label == "data":
            if let data = child.value as? DispatchData {
                uploadBody = .data(Data(data))
            } else if let data = child.value as? Data {
                uploadBody = .data(data)
            } else {
                throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.knownBody).data",
                                                   problem: "holds \(type(of: child.value)), not DispatchData or Data")
            }
        case let child? where child.label == "file":
            guard let url = child.value as? URL else {
                throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.knownBody).file",
                                                   problem: "holds \(type(of: child.value)), not a URL")
            }
            uploadBody = .file(url)
        case let child?:
            // A body the pinned session does not know how to read (a stream): refusing it is
            // better than sending the request without it.
            throw URLSessionIntrospectionError(field: "URLSessionTask.\(fields.knownBody).\(child.label ?? "?")",
                                               problem: "is a kind of upload body the pinned session cannot read")
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

    static func property(_ label: String, of subject: Any) -> Any? {
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

    static func unwrap(_ value: Any?) -> Any? {
        guard let value else { return nil }
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrap($0.value) }
    }
}

/// A stored property that holds a strong reference to an object, found once per class and then
/// read at its offset.
struct ObjectField: Sendable {
    /// Bytes from the start of the object.
    let offset: Int

    private struct Key: Hashable {
        let type: ObjectIdentifier
        let name: String
    }

    /// Found so far, by class and name (a class's layout does not change while a process runs).
    private static let found = Locked<[Key: ObjectField]>([:])

    /// The object in `subject`'s stored property `name`; nil when the property holds nil. The
    /// first call for a class finds the property and checks it (``locate(_:in:owner:)``); a
    /// property that cannot be read so is an error naming it as `owner.name`.
    static func read(_ name: String, of subject: AnyObject, in owner: String) throws(URLSessionIntrospectionError) -> AnyObject? {
        let key = Key(type: ObjectIdentifier(type(of: subject)), name: name)
        let field: ObjectField
        if let known = found.withLock({ $0[key] }) {
            field = known
        } else {
            field = try locate(name, in: subject, owner: owner)
            found.withLock { $0[key] = field }
        }
        return field.object(in: subject)
    }

    /// The word at ``offset`` in `subject`, as it is.
    private func word(in subject: AnyObject) -> UnsafeRawPointer? {
        withExtendedLifetime(subject) {
            UnsafeRawPointer(Unmanaged.passUnretained(subject).toOpaque()).load(fromByteOffset: offset, as: UnsafeRawPointer?.self)
        }
    }

    /// The object referenced at ``offset`` in `subject`, retained.
    ///
    /// The load and the retain are not atomic: they are safe only while nothing writes the
    /// field meanwhile. Corelibs writes `URLSessionTask.session` (set to nil as the task
    /// completes) on the session's work queue, and ``URLSessionTaskIntrospection/init(task:fields:)``
    /// runs there (`startLoading`), so keep every read on that queue. An `unowned(safe)` field
    /// would pass ``locate(_:in:owner:)``'s check (its word is the object's address) and must
    /// never be named here: none of the fields read today is unowned.
    private func object(in subject: AnyObject) -> AnyObject? {
        word(in: subject).map { Unmanaged<AnyObject>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Finds `name` in the runtime's list of `subject`'s stored properties (its superclasses'
    /// included) and accepts it only if the word at its offset is the object `Mirror` reads
    /// from the property: a strong reference, alone or first in an optional or a class-bound
    /// existential. A weak or unowned reference stores something else there, and so does a
    /// value; an empty property cannot be checked. Each is refused.
    static func locate(_ name: String, in subject: AnyObject, owner: String) throws(URLSessionIntrospectionError) -> ObjectField {
        var offset: Int?
        // `_EachFieldOptions.classType` (its raw value: the static is a `var`, which strict
        // concurrency refuses to read); without it a class's fields are not listed at all.
        _forEachField(of: type(of: subject), options: _EachFieldOptions(rawValue: 1)) { fieldName, fieldOffset, _, _ in
            guard String(cString: fieldName) == name else { return true }
            offset = fieldOffset
            return false
        }
        guard let offset, offset >= 0, offset % MemoryLayout<UnsafeRawPointer>.alignment == 0 else {
            throw URLSessionIntrospectionError(field: "\(owner).\(name)", problem: "was not found")
        }
        guard let reflected = URLSessionTaskIntrospection.unwrap(URLSessionTaskIntrospection.property(name, of: subject)),
              type(of: reflected) is AnyClass else {
            throw URLSessionIntrospectionError(field: "\(owner).\(name)", problem: "holds no object")
        }
        let field = ObjectField(offset: offset)
        // The raw word is compared before anything is made of it: a weak reference's word
        // points at a side table, and retaining it as an object would be undefined.
        guard field.word(in: subject) == UnsafeRawPointer(Unmanaged.passUnretained(reflected as AnyObject).toOpaque()) else {
            throw URLSessionIntrospectionError(field: "\(owner).\(name)", problem: "is not a strong reference at the offset the runtime gives")
        }
        return field
    }
}

/// A field of FoundationNetworking the pinned session reads was not where it was: the task is
/// refused (``URLSessionTaskIntrospection``).
struct URLSessionIntrospectionError: Error, Sendable, CustomStringConvertible {
    /// The field, as `Type.property` (`URLSessionTask.workQueue`).
    let field: String
    /// What is wrong with it.
    let problem: String

    var description: String {
        "FoundationNetworking's \(field) \(problem) on this toolchain. The pinned session refuses the task rather than run it unsafely (unsynchronised callbacks, a lost body); a PinStore release for this Foundation version is needed."
    }
}
#endif
