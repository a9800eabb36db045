import Foundation
import PinStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder as the vantage points' medium: a local file system, or one shared over NFS v3+ or
/// EFS (both give `link(2)` its create-exclusive meaning across clients).
///
/// - **Exclusive create.** An object is written whole to a temporary file and fsynced, then
///   `link(2)`ed to its name, which fails when the name exists: a name appears once, complete,
///   for the first writer. A crash leaves at most a temporary file, never a half-written name.
/// - **Bounded reads.** A name is opened with `O_NOFOLLOW` (a symbolic link is refused, never
///   followed) and `O_NONBLOCK` (a FIFO cannot hang the reader); only a regular file is read,
///   its size checked with `fstat` before one byte is read, and never more than that bound.
/// - **Listing.** The folder is read one entry at a time, keeping only names with the prefix
///   asked for, so a folder holding millions of other names costs time, not memory.
package struct FolderMedium: PublicationMedium {
    package let url: URL

    package init(url: URL) {
        self.url = url
    }

    package func names(withPrefix prefix: String, limit: Int) throws(PublisherError) -> (names: [String], truncated: Bool) {
        guard let directory = opendir(url.path) else {
            let code = errno
            if code == ENOENT { return ([], false) }
            throw PublisherError(.proposal, "The proposals folder \(url.path) cannot be listed: \(String(cString: strerror(code))).")
        }
        defer { closedir(directory) }
        // The name is read in place (`d_name` may be shorter than its declared 256 bytes at the
        // end of the libc buffer, so it is never copied whole).
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 0
        var matching: [String] = []
        var truncated = false
        while let entry = readdir(directory) {
            let name = String(cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
            guard name.hasPrefix(prefix) else { continue }
            if matching.count >= limit {
                truncated = true
                continue
            }
            matching.append(name)
        }
        return (matching.sorted(), truncated)
    }

    package func read(_ name: String, maximumSize: Int) throws(PublisherError) -> Data? {
        guard Self.isPlainName(name) else { return nil }
        do {
            return try RegularFileReader.contents(ofFileAt: url.appendingPathComponent(name).path, followingSymlinks: false,
                                                  maximumSize: maximumSize).0
        } catch .missing {
            return nil
        } catch {
            throw PublisherError(.proposal, "\(name) is not read: \(error); ignoring it.")
        }
    }

    package func createExclusively(_ name: String, contents: Data) throws(PublisherError) -> Bool {
        guard Self.isPlainName(name) else {
            throw PublisherError(.proposal, "\(String(reflecting: name)) is not a name the protocol writes.")
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        } catch {
            throw PublisherError(.proposal, "The proposals folder \(url.path) cannot be created: \(error.localizedDescription)")
        }
        let target = url.appendingPathComponent(name)
        let temporary = url.appendingPathComponent(".\(name).\(UInt64.random(in: 0...UInt64.max)).tmp")
        do {
            try PersistentListFile.writeAtomically(contents, to: temporary, permissions: 0o644)
        } catch {
            throw PublisherError(.proposal, "\(name) could not be written: \(error.reason)")
        }
        defer { unlink(temporary.path) }
        guard link(temporary.path, target.path) == 0 else {
            let code = errno
            if code == EEXIST { return false }
            throw PublisherError(.proposal, "\(name) could not be created: \(String(cString: strerror(code)))")
        }
        let directory = open(url.path, O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
        return true
    }

    /// Letters, digits, `-`, `_` and `.`, not starting with a dot: never a path.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 200 && !name.hasPrefix(".")
            && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E }
    }
}
