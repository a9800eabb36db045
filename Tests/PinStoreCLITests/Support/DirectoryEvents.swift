import Foundation
#if canImport(Glibc)
import Glibc

/// What happened in one folder, as the kernel reports it to any local user watching it
/// (inotify): the view of an attacker racing a key file's `chmod`.
final class DirectoryEvents {
    struct Event: Equatable {
        let name: String
        let mask: UInt32
        var isCreate: Bool { mask & UInt32(IN_CREATE) != 0 }
        var isMovedIn: Bool { mask & UInt32(IN_MOVED_TO) != 0 }
        var isAttributeChange: Bool { mask & UInt32(IN_ATTRIB) != 0 }
    }

    private let fd: Int32

    /// Starts watching `directory` for creations, renames into it and attribute changes.
    init(watching directory: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, directory, UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB)) >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL)
        }
    }

    deinit { close(fd) }

    /// Every event queued so far.
    func drain() -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                let nameBytes = buffer[(offset + header)..<(offset + header + length)].prefix { $0 != 0 }
                events.append(Event(name: String(decoding: nameBytes, as: UTF8.self), mask: mask))
                offset += header + length
            }
        }
    }
}
#endif
