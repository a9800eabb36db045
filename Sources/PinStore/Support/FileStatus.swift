// The one place where the C libraries' `stat(2)` differ for us. Darwin names the times
// `st_mtimespec`, Glibc and Musl `st_mtim` (swift-nio's `NIOFS/FileInfo.swift` switches the
// same way), and `mode_t` is 16 bits on Darwin, 32 elsewhere. Everything else the store calls
// (open, read, fsync, rename, unlink, inet_pton) has the same Swift signature on all three.
// This file imports no Foundation on purpose: `scripts/macos-typecheck.sh` compiles it against
// a Darwin stub alone, so a Glibc-only name here fails that check.
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What `stat(2)` says about a path or an open file, in the same words on every platform.
package struct FileStatus: Sendable, Equatable {
    /// The device the file lives on.
    var device: Int64
    /// The inode number.
    var inode: UInt64
    /// The size in bytes.
    var size: Int64
    /// The mode bits: file type and permissions.
    package var mode: UInt32
    /// The owner's user id.
    package var owner: UInt32
    /// The last modification, seconds since 1970.
    var modificationSeconds: Int64
    /// The nanoseconds of the last modification within its second.
    var modificationNanoseconds: Int64

    /// Whether this is a regular file (not a folder, link, socket, device or pipe).
    var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }

    /// Whether this is a symbolic link (only an `lstat` can say so).
    var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }

    /// Whether anyone other than the owner may write to it.
    package var isWritableByGroupOrOthers: Bool { mode & UInt32(S_IWGRP | S_IWOTH) != 0 }

    /// The permission bits, set-id and sticky bits included (`0o7777`).
    var permissions: UInt32 { mode & 0o7777 }

    /// Whether the process's effective user, or root, owns the file: only they can have
    /// written it in a folder others may write to as well.
    package var isOwnedByEffectiveUserOrRoot: Bool { owner == Self.effectiveUser || owner == 0 }

    /// The process's effective user id (here, so that no other file names a libc call).
    package static var effectiveUser: UInt32 { UInt32(geteuid()) }

    /// The status of `path`; nil when it cannot be had (missing, no permission).
    ///
    /// - Parameter followingSymlinks: false to describe a symbolic link itself (`lstat`).
    init?(path: String, followingSymlinks: Bool = true) {
        var info = stat()
        let result = followingSymlinks ? stat(path, &info) : lstat(path, &info)
        guard result == 0 else { return nil }
        self.init(info)
    }

    /// The status of an open file descriptor; nil when `fstat` fails.
    init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        device = Int64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        mode = UInt32(info.st_mode)
        owner = UInt32(info.st_uid)
        #if canImport(Darwin)
        modificationSeconds = Int64(info.st_mtimespec.tv_sec)
        modificationNanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
        modificationSeconds = Int64(info.st_mtim.tv_sec)
        modificationNanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
    }
}
