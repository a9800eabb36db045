import Foundation

/// Reads the signed list (and the key documents) from files: for a fleet whose own channel
/// delivers files to every instance (a Kubernetes ConfigMap or Secret volume, a sidecar that
/// syncs a folder, a configuration-management run), so that ``PinStore/run()`` needs no HTTP.
///
/// A store whose ``PinStore/Configuration/serviceURL`` (and
/// ``PinStore/Configuration/keyDocumentURL``) is a `file:` URL uses it without being told:
///
/// ```swift
/// var configuration = PinStore.Configuration(
///     serviceURL: URL(fileURLWithPath: "/etc/pinstore/list.json"),
///     publicKey: teamKey)
/// configuration.keyDocumentURL = URL(fileURLWithPath: "/etc/pinstore/keys.json")
/// let store = try PinStore(configuration: configuration)
/// // run() notices a changed file within listFileCheckInterval and installs it.
/// ```
///
/// What is read is verified exactly as a download is (signatures, threshold, key documents,
/// version, expiry); a refused or unreadable file leaves the list in force and the update
/// report says why. Symbolic links are followed, since that is how Kubernetes swaps a volume's
/// files at once (`list.json -> ..data/list.json`, then `..data` renamed to a new folder):
/// the file's content is trusted only through its signatures, never through where it lies.
/// Anything but a regular file (a folder, a FIFO that would block) is refused before a byte is
/// read, and a file past ``FingerprintListRequest/maximumBodySize`` is not read.
///
/// A file that cannot be read throws ``PinStoreError/Code/network``: it is the list's
/// transport, and a store treats it as it treats an unreachable server (the pins in force
/// stay, and the next attempt comes on the usual schedule, or as soon as the file changes).
public struct FileListFetcher: FingerprintListFetcher {
    /// Creates a fetcher for `file:` URLs.
    public init() {}

    /// Reads the file `request.url` names.
    public func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        guard request.url.isFileURL else {
            throw PinStoreError(.network, "The \(request.document) URL \(request.url.absoluteString) is not a file: URL; FileListFetcher reads files only.")
        }
        let path = request.url.path
        do throws(RegularFileReader.Failure) {
            let (body, _) = try RegularFileReader.contents(ofFileAt: path, followingSymlinks: true, maximumSize: request.maximumBodySize)
            return FingerprintListResponse(statusCode: 200, headers: [:], body: body)
        } catch {
            switch error {
            case .tooLarge(let size):
                throw PinStoreError(.invalidListData, "The \(request.document) file \(path) is \(size) bytes, more than the \(request.maximumBodySize)-byte limit; it was not read.")
            case .missing:
                throw PinStoreError(.network, "The \(request.document) file \(path) does not exist (yet); the list in force stays.")
            case .notRegularFile:
                throw PinStoreError(.network, "The \(request.document) file \(path) is not a regular file (a folder, FIFO or device); it was not read.")
            case .symbolicLink, .unopenable, .unreadable, .refused:
                throw PinStoreError(.network, "The \(request.document) file \(path) could not be read: \(error).")
            case .grew:
                throw PinStoreError(.network, "The \(request.document) file \(path) changed while it was read; the next attempt reads it again.")
            }
        }
    }

    /// What identifies the file `url` names as it is now, links followed: a changed device,
    /// inode, size or modification time means its content may have changed (a Kubernetes swap
    /// gives the file a new inode). Nil when there is no such file.
    static func identity(of url: URL) -> FileIdentity? {
        guard let status = FileStatus(path: url.path, followingSymlinks: true) else { return nil }
        return FileIdentity(device: status.device, inode: status.inode, size: status.size,
                            modificationSeconds: status.modificationSeconds,
                            modificationNanoseconds: status.modificationNanoseconds)
    }

    /// See ``identity(of:)``.
    struct FileIdentity: Sendable, Equatable {
        var device: Int64
        var inode: UInt64
        var size: Int64
        var modificationSeconds: Int64
        var modificationNanoseconds: Int64
    }
}

/// The fetcher a store uses when none is given: files for `file:` URLs, URLSession for the rest.
struct DefaultListFetcher: FingerprintListFetcher {
    private let files = FileListFetcher()
    private let network = URLSessionListFetcher()

    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        request.url.isFileURL ? try await files.fetch(request) : try await network.fetch(request)
    }
}
