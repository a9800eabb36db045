// A stub of Darwin for the macOS type-check on Linux: the declarations the package uses, with
// the Swift signatures the macOS SDK gives them (the C importer's for functions, the Darwin
// overlay's `Platform.swift` for the mode constants, which are macros in C). Bodies are never
// run: the module is only type-checked against.
//
// It does not re-export Glibc. On Linux, Foundation re-exports Glibc, so a file importing
// Foundation still sees Glibc's names; the one file that reads `stat` imports no Foundation,
// and MacOSView.swift rejects Glibc-only names everywhere.
@_exported import _DarwinStubTypes

public func stat(_ path: UnsafePointer<CChar>!, _ buf: UnsafeMutablePointer<_DarwinStubTypes.stat>!) -> Int32 {
    fatalError("stub")
}
public func lstat(_ path: UnsafePointer<CChar>!, _ buf: UnsafeMutablePointer<_DarwinStubTypes.stat>!) -> Int32 {
    fatalError("stub")
}
public func fstat(_ fd: Int32, _ buf: UnsafeMutablePointer<_DarwinStubTypes.stat>!) -> Int32 {
    fatalError("stub")
}
public func geteuid() -> uid_t {
    fatalError("stub")
}

public var S_IFMT: mode_t { mode_t(0o170000) }
public var S_IFREG: mode_t { mode_t(0o100000) }
public var S_IFDIR: mode_t { mode_t(0o040000) }
public var S_IFLNK: mode_t { mode_t(0o120000) }
public var S_IRWXU: mode_t { mode_t(0o000700) }
public var S_IWGRP: mode_t { mode_t(0o000020) }
public var S_IWOTH: mode_t { mode_t(0o000002) }
