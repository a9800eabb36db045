import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a lock. Critical sections are short and never await.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: every access to the value goes through `lock`.
    private let lock = PlatformLock()
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

#if canImport(Glibc) || canImport(Musl)
/// A pthread mutex, on Linux: every pin decision takes a `Locked` once, and
/// swift-corelibs-foundation's `NSLock` (an open class around the same mutex) cost about 130
/// instructions a lock and unlock, a twentieth of a `matchPins`. `Synchronization.Mutex` would
/// do on Linux but needs macOS 15 on a Mac, so the Mac keeps `NSLock` (below).
private final class PlatformLock: @unchecked Sendable {
    // @unchecked: a pthread mutex is made to be shared between threads; it lives at a fixed
    // address (allocated, never moved) as pthread requires.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // Default attributes: a normal mutex, which cannot fail to initialise on Linux.
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }
}
#else
private typealias PlatformLock = NSLock
#endif
