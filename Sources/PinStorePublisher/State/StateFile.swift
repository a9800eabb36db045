import Foundation
import PinStore

/// The publisher's state on disk: a header line with a SHA-256 checksum, then the state's JSON.
///
/// ```
/// pinstore-publisher-state 1 sha256=<hex of the JSON bytes below>
/// {"announcements": [], ...}
/// ```
///
/// Written atomically (temporary file, fsync, rename, fsync of the folder) with mode 0600, and
/// read with the same checks as the store's own file (`RegularFileReader`, package API): no
/// symbolic link followed, refused when another user owns it or group or others may write it,
/// bounded in size; each refusal says what to do, since the publisher does not start without it. The checksum refuses a truncated, half-copied or hand-edited file with a typed
/// error (never a trap, never a half-read state): a hand edit would otherwise be a way to add
/// sightings and publish a certificate nobody saw. A checksum is not a MAC: someone who can
/// write the file as this user can also write a matching checksum, but such a person can
/// already use the signing keys, and the ownership check keeps everyone else out.
package struct StateFile: Sendable {
    package let url: URL
    /// The header's first words.
    static let magic = "pinstore-publisher-state 1 sha256="
    /// Larger files are refused unread, and never written (1,000 honest partners with a year of
    /// history fit in a few MB; each partner's share is bounded by ``PublisherState/Bounds``).
    package static let maximumSize = 64 << 20
    /// This file's limit: ``maximumSize`` (tests give a smaller one).
    package let sizeLimit: Int

    package init(url: URL, sizeLimit: Int = StateFile.maximumSize) {
        self.url = url
        self.sizeLimit = sizeLimit
    }

    /// The state saved last; a fresh state when there is no file yet.
    ///
    /// - Throws: ``PublisherError/Code/stateFile`` when the file is a link, not ours, writable by
    ///   others, larger than the limit, truncated, edited, or not a state file.
    package func load() throws(PublisherError) -> PublisherState {
        let path = url.path
        let bytes: Data
        do throws(RegularFileReader.Failure) {
            // The same reader and checks as the store's own file, with the publisher's words: a
            // store ignores a bad file until its next download replaces it, while the publisher
            // refuses to start (starting afresh would stage every partner for a person again),
            // so each refusal says what to do.
            bytes = try RegularFileReader.contents(ofFileAt: path, followingSymlinks: false, maximumSize: sizeLimit) { info in
                if !info.isOwnedByEffectiveUserOrRoot {
                    return "The state file \(path) belongs to user \(info.owner), not to this process's user (\(FileStatus.effectiveUser)) or root; someone else may have planted it, so the publisher does not read it. Run the publisher as the file's owner, or check the file, then give it to this user (chown) with mode 0600."
                }
                if info.isWritableByGroupOrOthers {
                    return "The state file \(path) is writable by group or others (mode \(String(info.mode & 0o777, radix: 8))); the publisher writes it 0600, so someone changed its mode or wrote it. Check its contents (`pinstore publish status` after restoring), then `chmod 600 \(path)`; keep the state folder private (0700)."
                }
                return nil
            }.0
        } catch {
            switch error {
            case .missing:
                return PublisherState()
            case .symbolicLink:
                throw PublisherError(.stateFile, "The state file \(path) is a symbolic link, which the publisher does not follow. Replace it with the file it points to (mode 0600), or point stateFolder at the real folder.")
            case .notRegularFile:
                throw PublisherError(.stateFile, "The state file \(path) is not a regular file (a folder, FIFO, socket or device). Move it aside; the publisher then starts afresh (and stages every partner's certificate for a person again).")
            case .tooLarge(let size):
                throw PublisherError(.stateFile, "The state file \(path) is \(size) bytes, more than the \(sizeLimit) the publisher reads. Restore it from a backup, or move it aside to start afresh (every partner is then staged for a person again).")
            case .grew:
                throw PublisherError(.stateFile, "The state file \(path) changed while it was read: is another publisher running with the same stateFolder? Stop it, then start this one again.")
            case .refused(let why):
                throw PublisherError(.stateFile, why)
            case .unopenable(let why), .unreadable(let why):
                throw PublisherError(.stateFile, "The state file \(path) could not be read (\(why)). Check the file's owner and mode (the publisher's user, 0600) and the state folder's.")
            }
        }
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
            throw PublisherError(.stateFile, "The state file \(url.path) has no header line; it is truncated or not a publisher state file. Move it aside: the publisher then starts afresh (and stages every partner's certificate for a person again).")
        }
        let header = String(decoding: bytes[bytes.startIndex..<newline], as: UTF8.self)
        let body = Data(bytes[(newline + 1)...])
        guard header.hasPrefix(Self.magic) else {
            throw PublisherError(.stateFile, "The state file \(url.path) does not start with \"\(Self.magic)\"; it is not a publisher state file of this version.")
        }
        let expected = String(header.dropFirst(Self.magic.count))
        guard expected == Self.hex(SHA256Digest.hash(body)) else {
            throw PublisherError(.stateFile, "The state file \(url.path) does not match its checksum: it was truncated or edited. Restore it from a backup, or move it aside to start afresh.")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do {
            return try decoder.decode(PublisherState.self, from: body)
        } catch {
            throw PublisherError(.stateFile, "The state file \(url.path) matches its checksum but does not decode (\(error)); was it written by another version?")
        }
    }

    /// Replaces the file atomically.
    ///
    /// - Throws: ``PublisherError/Code/stateFile`` when the file cannot be written, or would be
    ///   larger than ``sizeLimit``: a file the publisher could not read back would stop every
    ///   command and every restart, so the previous file stays instead.
    package func save(_ state: PublisherState) throws(PublisherError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        let body: Data
        do {
            body = try encoder.encode(state)
        } catch {
            throw PublisherError(.stateFile, "The state could not be encoded: \(error)")
        }
        var bytes = Data((Self.magic + Self.hex(SHA256Digest.hash(body)) + "\n").utf8)
        bytes.append(body)
        guard bytes.count <= sizeLimit else {
            throw PublisherError(.stateFile, "The state would take \(bytes.count) bytes, more than the \(sizeLimit) the publisher reads back; the previous state file stays. Each partner takes at most \(PublisherState.Bounds.bytesPerPartner) bytes: split the partners over several publication files.")
        }
        do {
            try PersistentListFile.writeAtomically(bytes, to: url)
        } catch {
            throw PublisherError(.stateFile, "The state file could not be written (the previous one stays): \(error.reason)")
        }
    }

    static func hex(_ bytes: Data) -> String {
        bytes.map { byte in byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }
}
