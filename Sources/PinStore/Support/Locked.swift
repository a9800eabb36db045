import Foundation

/// A value behind a lock. Critical sections are short and never await.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: every access to the value goes through `lock`.
    private let lock = NSLock()
    // Behind a pointer, not in a stored `var`: the lock already makes each access exclusive,
    // and a class's stored `var` adds a dynamic exclusivity check (swift_beginAccess, about 60
    // instructions) to every `withLock`, which every pin decision makes.
    private let storage: UnsafeMutablePointer<Value>

    package init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}
