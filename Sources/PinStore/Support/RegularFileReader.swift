import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a whole regular file, bounded: the size comes from what was opened (`fstat`), one byte
/// more than that is asked for to notice a file that grows, and anything that is not a regular
/// file (a folder, a FIFO that would block the read, a device) is refused before a byte is read.
/// Foundation's `Data(contentsOf:)` does none of that, hence this.
package enum RegularFileReader {
    /// Why a file was not read; the caller words it for its own file.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// Nothing at the path.
        case missing
        /// The path is a symbolic link and links were not to be followed.
        case symbolicLink
        /// `open` failed for another reason (errno's words).
        case unopenable(String)
        /// A folder, FIFO, socket or device.
        case notRegularFile
        /// Larger than allowed (the size `fstat` gave).
        case tooLarge(Int)
        /// `read` failed (errno's words).
        case unreadable(String)
        /// The file grew while it was read.
        case grew
        /// The caller's look at the opened file refused it (its words).
        case refused(String)

        /// In words, for the caller's message.
        package var description: String {
            switch self {
            case .missing: "there is no such file"
            case .symbolicLink: "it is a symbolic link, which is not followed here"
            case .unopenable(let why): "it could not be opened (\(why)): check the file's owner and mode"
            case .notRegularFile: "it is not a regular file (a folder, FIFO, socket or device)"
            case .tooLarge(let size): "it is \(size) bytes, more than allowed"
            case .unreadable(let why): "it could not be read (\(why))"
            case .grew: "it changed while it was read"
            case .refused(let why): why
            }
        }
    }

    /// The file's bytes and its status as opened.
    ///
    /// - Parameters:
    ///   - followingSymlinks: false opens with `O_NOFOLLOW` (the store's own file); true follows
    ///     them (a Kubernetes volume's `list.json -> ..data/list.json`).
    ///   - check: the caller's look at the opened file, before its size is judged and anything
    ///     is read (the store refuses a file another user owns); a non-nil answer is thrown as
    ///     ``Failure/refused(_:)``.
    package static func contents(ofFileAt path: String, followingSymlinks: Bool, maximumSize: Int,
                                 check: (FileStatus) -> String? = { _ in nil }) throws(Failure) -> (Data, FileStatus) {
        // Looked at before it is opened: opening a device can have effects of its own (a tape
        // rewinds, a serial line drops), whoever pointed the path at it. What is opened is then
        // checked to be the file looked at.
        let before = FileStatus(path: path, followingSymlinks: followingSymlinks)
        if let before, before.isSymbolicLink, !followingSymlinks { throw .symbolicLink }
        if let before, !before.isRegularFile { throw .notRegularFile }
        let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingSymlinks ? 0 : O_NOFOLLOW)
        let fd = open(path, flags)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing }
            if code == ELOOP, !followingSymlinks { throw .symbolicLink }
            throw .unopenable(String(cString: strerror(code)))
        }
        defer { close(fd) }
        guard let info = FileStatus(descriptor: fd) else { throw .unopenable(String(cString: strerror(errno))) }
        guard info.isRegularFile else { throw .notRegularFile }
        if let before, before.device != info.device || before.inode != info.inode { throw .grew }
        if let refusal = check(info) { throw .refused(refusal) }
        let size = Int(clamping: info.size)
        guard size <= maximumSize else { throw .tooLarge(size) }
        var data = Data(count: size + 1)
        var total = 0
        var readError: Int32 = 0
        data.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            while total < raw.count {
                let n = read(fd, base + total, raw.count - total)
                if n < 0 {
                    if errno == EINTR { continue }
                    readError = errno
                    return
                }
                if n == 0 { return }
                total += n
            }
        }
        guard readError == 0 else { throw .unreadable(String(cString: strerror(readError))) }
        guard total <= size else { throw .grew }
        data.count = total
        return (data, info)
    }
}
