// Darwin's C types as Swift imports them on an arm64 Mac (macOS 13+ SDK, <sys/stat.h>,
// <sys/_types/*.h>), for the macOS type-check on Linux. Only what the package reads; add a
// field or type with Apple's exact name and Swift type when the code needs one.
// A module of its own because Swift source cannot declare the type `stat` and the function
// `stat` in one module, as the C importer does; `Darwin` re-exports it.

public typealias __darwin_time_t = Int
public typealias dev_t = Int32
public typealias mode_t = UInt16
public typealias nlink_t = UInt16
public typealias ino_t = UInt64
public typealias uid_t = UInt32
public typealias gid_t = UInt32
public typealias off_t = Int64
public typealias blkcnt_t = Int64
public typealias blksize_t = Int32

/// `struct timespec`.
public struct timespec: Sendable {
    public var tv_sec: __darwin_time_t
    public var tv_nsec: Int
    public init() { tv_sec = 0; tv_nsec = 0 }
    public init(tv_sec: __darwin_time_t, tv_nsec: Int) { self.tv_sec = tv_sec; self.tv_nsec = tv_nsec }
}

/// `struct stat` (the 64-bit-inode layout every current macOS uses). Darwin names the times
/// `st_atimespec`, `st_mtimespec`, `st_ctimespec`, `st_birthtimespec`; Glibc's `st_mtim` is absent.
public struct stat: Sendable {
    public var st_dev: dev_t = 0
    public var st_mode: mode_t = 0
    public var st_nlink: nlink_t = 0
    public var st_ino: ino_t = 0
    public var st_uid: uid_t = 0
    public var st_gid: gid_t = 0
    public var st_rdev: dev_t = 0
    public var st_atimespec = timespec()
    public var st_mtimespec = timespec()
    public var st_ctimespec = timespec()
    public var st_birthtimespec = timespec()
    public var st_size: off_t = 0
    public var st_blocks: blkcnt_t = 0
    public var st_blksize: blksize_t = 0
    public var st_flags: UInt32 = 0
    public var st_gen: UInt32 = 0
    public var st_lspare: Int32 = 0
    public var st_qspare: (Int64, Int64) = (0, 0)
    public init() {}
}
