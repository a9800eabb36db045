import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files that hold secrets (private keys) so that no other user can ever read them:
/// the file is created with mode 0600 by `open(2)` itself (`O_CREAT | O_EXCL`), so there is
/// no moment, not even between a create and a `chmod`, at which it is readable by others.
///
/// `Data.write(options: .atomic)` is not good enough: its temporary file is created with the
/// umask's mode (usually 0644) and a local user watching the folder with inotify can open it
/// before any later `chmod`.
enum SecretFile {
    /// Creates `path` (0600) holding `data`. An existing file (or symlink) is refused unless
    /// `replacingExisting`, in which case a fresh 0600 file is written beside it and renamed
    /// over it, so the old content stays intact until the new one is complete.
    static func write(_ data: Data, to path: String, replacingExisting: Bool) throws {
        if !replacingExisting {
            try create(path, data)
            return
        }
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UInt64.random(in: 0...UInt64.max)).tmp").path
        try create(temporary, data)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CLIError("cannot replace \(path): \(reason)")
        }
    }

    /// `open(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)`, write everything, fsync.
    private static func create(_ path: String, _ data: Data) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw CLIError("\(path) already exists; refusing to overwrite a key (use --force if you mean it)")
            }
            throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var failure: String?
        do {
            try FileHandle(fileDescriptor: fd, closeOnDealloc: false).write(contentsOf: data)
        } catch {
            failure = error.localizedDescription
        }
        if failure == nil, fsync(fd) != 0 {
            failure = String(cString: strerror(errno))
        }
        close(fd)
        if let failure {
            unlink(path)
            throw CLIError("cannot write \(path): \(failure)")
        }
    }
}
