import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the store keeps on disk: the signed material exactly as received, so the signature
/// is verified again every time the file is loaded. Editing, truncating or corrupting the
/// file therefore cannot plant a pin; it only makes the file unusable until the next update.
struct PersistedList: Codable, Sendable, Equatable {
    enum Mode: String, Codable, Sendable { case `static`, challenge }

    /// File format version.
    var format = 1
    var mode: Mode
    /// The list body exactly as the server sent it.
    var body: Data
    /// Challenge mode: the challenge string sent with the request.
    var challenge: String?
    /// Challenge mode: the `X-Cert-Pinning-Signature` header received.
    var signature: String?
    /// Challenge mode with a key set: the `X-PinStore-Signatures` header received (absent in
    /// older files and for one key).
    var extraSignatures: String? = nil
    /// When the next silent update is due (Unix seconds). Not signed: tampering with it can
    /// only move an update earlier or later, never change a pin.
    var nextUpdate: Double
    /// When this list was downloaded and verified (Unix seconds; absent in older files). Not
    /// signed: it only feeds the `pinstore_list_age_seconds` gauge.
    var updatedAt: Double?
}

/// One store file, written atomically (temporary file, fsync, rename, fsync of the folder)
/// with mode 0600, so a reader in this or another process sees the old file or the new one,
/// never a torn one.
package struct PersistentListFile: Sendable {
    package let url: URL
    /// Files larger than this are not read (a hostile or corrupted file cannot exhaust memory).
    package let maximumSize: Int

    /// A file at `url`, read only when at most `maximumSize` bytes. The publisher's state file
    /// is kept with the same rules (package API), so both refuse the same tampering.
    package init(url: URL, maximumSize: Int) {
        self.url = url
        self.maximumSize = maximumSize
    }

    /// Reads and decodes the file; nil when there is none.
    ///
    /// The file is opened without following a symlink (`O_NOFOLLOW`) and its size is taken
    /// from what was opened (`fstat`), so neither a link nor a swap between a check and the
    /// read can make the store read something else, or something huge. A file that is not a
    /// regular file, that another user than the effective one (or root) owns, or that group or
    /// others may write (the store creates it 0600, so someone changed it), is refused; a
    /// storage folder writable by group or others is reported to `logger` at warning level,
    /// since whoever can write there can delete the file, or plant one before the store
    /// creates its own (never a pin the list key did not sign: the content is verified again
    /// on every load, and a file of another user is not read at all).
    func load(logger: Logger? = nil) throws(PinStoreError) -> PersistedList? {
        guard let data = try readBytes(logger: logger) else { return nil }
        let path = url.path
        do {
            let decoded = try JSONDecoder().decode(PersistedList.self, from: data)
            guard decoded.format == 1 else {
                throw PinStoreError(.storage, "The store file \(path) has format \(decoded.format); this version reads format 1.")
            }
            return decoded
        } catch let error as PinStoreError {
            throw error
        } catch {
            throw PinStoreError(.storage, "The store file \(path) is truncated or corrupt; ignoring it until the next good update.")
        }
    }

    /// The file's bytes, read with the checks ``load(logger:)`` describes; nil when there is
    /// no file.
    package func readBytes(logger: Logger? = nil) throws(PinStoreError) -> Data? {
        let path = url.path
        warnAboutWritableDirectory(logger: logger)
        removeStaleTemporaryFiles()
        do throws(RegularFileReader.Failure) {
            return try RegularFileReader.contents(ofFileAt: path, followingSymlinks: false, maximumSize: maximumSize) { info in
                // Before anything else is read: in a folder others may write to (a sticky /tmp), a
                // file another user owns may be an old, validly signed list planted to take
                // effect at start-up.
                if !info.isOwnedByEffectiveUserOrRoot {
                    return "The store file \(path) belongs to user \(info.owner), not to this process's user (\(FileStatus.effectiveUser)) or root; someone else may have planted it. Ignoring it: remove it, or give the store a private storage directory (0700)."
                }
                if info.isWritableByGroupOrOthers {
                    return "The store file \(path) is writable by group or others (mode \(String(info.mode & 0o777, radix: 8))); the store writes it 0600, so it was changed by someone else. Ignoring it until the next update replaces it."
                }
                return nil
            }.0
        } catch {
            switch error {
            case .missing:
                return nil
            case .symbolicLink:
                throw PinStoreError(.storage, "The store file \(path) is a symbolic link; it is not followed. Remove it: the next update writes a regular file.")
            case .notRegularFile:
                throw PinStoreError(.storage, "The store file \(path) is not a regular file; ignoring it.")
            case .tooLarge(let size):
                throw PinStoreError(.storage, "The store file \(path) is \(size) bytes, more than a list can be; ignoring it.")
            case .grew:
                throw PinStoreError(.storage, "The store file \(path) changed while it was read; ignoring it.")
            case .refused(let why):
                throw PinStoreError(.storage, why)
            case .unopenable, .unreadable:
                throw PinStoreError(.storage, "The store file \(path): \(error).")
            }
        }
    }

    /// Removes temporary files an earlier process left when it died between creating one and
    /// renaming it into place (a crash or SIGKILL mid-save). Only files older than a minute go,
    /// so a save under way in another process is never disturbed.
    private func removeStaleTemporaryFiles() {
        let directory = url.deletingLastPathComponent()
        let prefix = ".\(url.lastPathComponent)."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        let cutoff = Date().addingTimeInterval(-60)
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let path = directory.appendingPathComponent(name).path
            guard let info = FileStatus(path: path, followingSymlinks: false), info.isRegularFile, info.isOwnedByEffectiveUserOrRoot,
                  Double(info.modificationSeconds) < cutoff.timeIntervalSince1970 else { continue }
            unlink(path)
        }
    }

    /// Deletes the file at `path` only if it is still the one `status` describes (an `lstat`:
    /// same device, inode, size and modification time), so a file another process renamed into
    /// place since is left alone. `unlink` removes a symbolic link itself, never its target,
    /// and refuses a folder. True when the file was deleted.
    static func removeFile(atPath path: String, ifStill status: FileStatus) -> Bool {
        guard FileStatus(path: path, followingSymlinks: false) == status else { return false }
        return unlink(path) == 0
    }

    /// Logs a warning when the storage folder is writable by group or others.
    private func warnAboutWritableDirectory(logger: Logger?) {
        guard let logger else { return }
        let directory = url.deletingLastPathComponent().path
        guard let info = FileStatus(path: directory), info.isWritableByGroupOrOthers else { return }
        // A sticky shared folder (/tmp) keeps others from replacing our file, but not from
        // planting one before we create ours.
        logger.warning("the PinStore storage folder is writable by group or others; use a private folder (0700)",
                       metadata: ["pinstore.folder": "\(directory)", "pinstore.mode": "\(String(info.permissions, radix: 8))"])
    }

    /// Replaces the file atomically.
    func save(_ list: PersistedList) throws(PinStoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(list)
        } catch {
            throw PinStoreError(.storage, "The store could not be encoded: \(error)")
        }
        try Self.writeAtomically(data, to: url)
    }

    /// Replaces `url` with `data`: a temporary file in the same folder, written, fsynced and
    /// renamed over it, then the folder fsynced. A reader sees the old file or the new one,
    /// never a torn one, and a failure at any step leaves the old file in place.
    /// `permissions` are the new file's (0600: only this user; the publisher's output folder,
    /// which a web server reads, uses 0644).
    package static func writeAtomically(_ data: Data, to url: URL, permissions: UInt16 = 0o600) throws(PinStoreError) {
        let directory = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw PinStoreError(.storage, "The store folder \(directory.path) could not be created: \(error.localizedDescription)")
        }
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UInt64.random(in: 0...UInt64.max)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(permissions))
        guard fd >= 0 else {
            throw PinStoreError(.storage, "Could not create \(temporary.path): \(String(cString: strerror(errno)))")
        }
        var written = 0
        let ok: Bool = data.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += n
            }
            return true
        }
        let synced = ok && fsync(fd) == 0
        let failure = synced ? nil : String(cString: strerror(errno))
        close(fd)
        guard synced else {
            unlink(temporary.path)
            throw PinStoreError(.storage, "Could not write \(temporary.path): \(failure ?? "unknown error")")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw PinStoreError(.storage, "Could not replace \(url.path): \(reason)")
        }
        // Make the rename itself durable.
        let directoryFD = open(directory.path, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }
}
