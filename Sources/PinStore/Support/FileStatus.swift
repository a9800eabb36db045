import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the store needs from `stat(2)`, read the same way on Linux and Darwin: the one place
/// where their `struct stat` differs for us (Darwin names the times `st_mtimespec`, Glibc and
/// Musl `st_mtim`).
struct FileStatus: Sendable {
    /// The file type and permission bits (`st_mode`).
    let mode: mode_t
    /// The owner's user id.
    let owner: uid_t
    /// The size in bytes.
    let size: Int
    /// The last modification, in seconds and nanoseconds since 1970.
    let modified: (seconds: Int64, nanoseconds: Int64)

    init(_ info: stat) {
        mode = info.st_mode
        owner = info.st_uid
        size = Int(info.st_size)
        #if canImport(Darwin)
        modified = (Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec))
        #else
        modified = (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
        #endif
    }

    /// The status of an open file; nil with `errno` set when `fstat` fails.
    static func of(descriptor: Int32) -> FileStatus? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    /// The status of `path` itself, not following a final symbolic link; nil when `lstat` fails.
    static func of(linkAt path: String) -> FileStatus? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    /// The status of `path`, following symbolic links; nil when `stat` fails.
    static func of(path: String) -> FileStatus? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStatus(info)
    }

    var isRegularFile: Bool { mode & S_IFMT == S_IFREG }
    var isWritableByGroupOrOthers: Bool { mode & (S_IWGRP | S_IWOTH) != 0 }
    /// The permission bits, as `ls -l` shows them in octal (`600`).
    var permissions: String { String(mode & 0o7777, radix: 8) }

    /// Whether the process's effective user, or root, owns the file: only they can have
    /// written it in a folder others may write to as well.
    var isOwnedByEffectiveUserOrRoot: Bool { owner == geteuid() || owner == 0 }
}
