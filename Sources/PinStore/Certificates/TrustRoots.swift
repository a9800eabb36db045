import Foundation
internal import COpenSSL

/// The trust anchors a presented chain must lead to.
///
/// ```swift
/// let system = TrustRoots.system                                   // the OS trust store
/// let privateCA = TrustRoots.anchors([caCertificate])              // these anchors only
/// let both = TrustRoots.anchors([caCertificate], includingSystem: true)
/// ```
///
/// With caller-supplied anchors, an anchor may be any certificate of the chain, not only a
/// self-signed root: a private intermediate or a self-signed server certificate works.
public struct TrustRoots: Sendable {
    /// The anchors given by the caller (empty for ``system``).
    public let anchors: [X509Certificate]
    /// Whether the system trust store (OpenSSL's default paths) also counts.
    public let includesSystemStore: Bool
    let store: TrustStore

    /// The system trust store only (OpenSSL's default certificate file and directory, or
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR`).
    ///
    /// Nothing is read up front. When the certificate directory is hashed (`<subject hash>.N`
    /// files, as `update-ca-certificates` and `openssl rehash` make them), OpenSSL looks an
    /// issuer up there by name when a chain needs it; the whole bundle file is parsed only when
    /// a chain finds no trusted issuer that way (or the directory is not hashed), and from then
    /// on every chain is checked against bundle and directory together. Either way a chain is
    /// trusted exactly when it leads to a root of the bundle or of the directory.
    ///
    /// The store is read again when the bundle file or the certificate directory changes
    /// (size, modification time or inode; checked at most once a minute), so a root removed
    /// from the system store stops being trusted within about a minute, without a restart. A
    /// certificate edited in place inside the directory, without the directory itself
    /// changing, is not noticed (`update-ca-certificates` and `c_rehash` always change the
    /// directory).
    public static let system = TrustRoots(anchors: [], includingSystem: true)

    /// The given anchors, plus the system store when `includingSystem` is true.
    public static func anchors(_ anchors: [X509Certificate], includingSystem: Bool = false) -> TrustRoots {
        TrustRoots(anchors: anchors, includingSystem: includingSystem)
    }

    /// The certificates of a PEM text as anchors (a private CA, given once for every adapter:
    /// the pinned URLSession, `PinningTLSVerifier` and the pinned AsyncHTTPClient take this
    /// value), plus the system store when `includingSystem` is true.
    ///
    /// ```swift
    /// let partnerCA = try TrustRoots.anchors(pem: String(contentsOfFile: "/etc/partner/ca.pem", encoding: .utf8))
    /// ```
    ///
    /// - Throws: ``PinStoreError`` when the text holds no certificate or a malformed one.
    public static func anchors(pem: String, includingSystem: Bool = false) throws(PinStoreError) -> TrustRoots {
        TrustRoots(anchors: try X509Certificate.certificates(pem: pem), includingSystem: includingSystem)
    }

    /// The certificates of a file as anchors: PEM (one certificate or a bundle) or one DER
    /// certificate, the way a private CA usually arrives (`/etc/partner/ca.pem`, a mounted
    /// Secret), plus the system store when `includingSystem` is true.
    ///
    /// ```swift
    /// let partnerCA = try TrustRoots.anchors(contentsOf: URL(fileURLWithPath: "/etc/partner/ca.pem"))
    /// ```
    ///
    /// - Throws: ``PinStoreError``: ``PinStoreError/Code/invalidConfiguration`` when the file
    ///   cannot be read or is larger than 16 MiB, the certificate codes when it holds no
    ///   certificate or a malformed one.
    public static func anchors(contentsOf file: URL, includingSystem: Bool = false) throws(PinStoreError) -> TrustRoots {
        let data: Data
        do throws(RegularFileReader.Failure) {
            // A CA bundle is a few hundred KiB; 16 MiB bounds a wrong path (a device, a log).
            (data, _) = try RegularFileReader.contents(ofFileAt: file.path, followingSymlinks: true, maximumSize: 16 << 20)
        } catch {
            throw PinStoreError(.invalidConfiguration, "The anchor file \(file.path) could not be read: \(error).")
        }
        return TrustRoots(anchors: try X509Certificate.certificates(fileContents: data), includingSystem: includingSystem)
    }

    private init(anchors: [X509Certificate], includingSystem: Bool, systemSource: SystemTrustSource = .openSSLDefault) {
        self.anchors = anchors
        self.includesSystemStore = includingSystem
        self.store = TrustStore(anchors: anchors, system: includingSystem ? systemSource : nil)
    }

    /// A "system" store read from `file` and `directory` instead of OpenSSL's default paths,
    /// checked for changes every `checkInterval`: tests of the reload.
    package static func system(file: String, directory: String, checkInterval: Duration) -> TrustRoots {
        TrustRoots(anchors: [], includingSystem: true,
                   systemSource: SystemTrustSource(file: file, directories: [directory], checkInterval: checkInterval, isOpenSSLDefault: false))
    }
}

/// Where the system trust store comes from, and how often to look for changes.
struct SystemTrustSource: Sendable {
    let file: String
    let directories: [String]
    let checkInterval: Duration
    /// Whether this is OpenSSL's own default (then `X509_STORE_set_default_paths` loads it).
    let isOpenSSLDefault: Bool

    /// OpenSSL's default bundle and directory, or what `SSL_CERT_FILE` and `SSL_CERT_DIR` say
    /// (as OpenSSL itself reads them).
    static var openSSLDefault: SystemTrustSource {
        let environment = ProcessInfo.processInfo.environment
        let file = environment[String(cString: X509_get_default_cert_file_env())] ?? String(cString: X509_get_default_cert_file())
        let directories = (environment[String(cString: X509_get_default_cert_dir_env())] ?? String(cString: X509_get_default_cert_dir()))
            .split(separator: ":").map(String.init)
        return SystemTrustSource(file: file, directories: directories, checkInterval: .seconds(60), isOpenSSLDefault: true)
    }

    /// Whether the bundle can be left out at first: some directory holds hashed certificate
    /// files for OpenSSL's by-name lookup, and there is a bundle to fall back on.
    var looksUpDirectoriesFirst: Bool {
        FileManager.default.fileExists(atPath: file) && directories.contains(where: Self.isHashed)
    }

    /// Whether `directory` holds at least one `<8 hex digits>.<digits>` entry (OpenSSL's
    /// hashed-directory naming; `.r<digits>` names hold CRLs).
    static func isHashed(_ directory: String) -> Bool {
        // FileManager, not readdir: copying `dirent.d_name` (a 256-byte field) out of an entry
        // reads past the entry, and past glibc's buffer when the entry is its last one
        // (swift-corelibs-foundation#5472 crashed on exactly that).
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return false }
        return names.contains { name in
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 2 && parts[0].count == 8 && parts[0].allSatisfy(\.isHexDigit)
                && !parts[1].isEmpty && parts[1].allSatisfy(\.isWholeNumber)
        }
    }

    /// The name `openssl rehash` gives `certificate` in a hashed directory: its subject name's
    /// hash as 8 hex digits, then `.index`.
    static func hashedFileName(for certificate: X509Certificate, index: Int = 0) -> String? {
        guard let handle = try? X509Handle(der: certificate.derRepresentation) else { return nil }
        let hash = UInt32(truncatingIfNeeded: X509_subject_name_hash(handle.pointer))
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex + ".\(index)"
    }

    /// What identifies the current content cheaply: size, modification time and inode of the
    /// bundle and of each directory (a missing path counts as a state too).
    func stamp() -> [Int64] {
        var values: [Int64] = []
        for path in [file] + directories {
            if let info = FileStatus(path: path) {
                values += [info.device, Int64(truncatingIfNeeded: info.inode), info.size,
                           info.modificationSeconds, info.modificationNanoseconds]
            } else {
                values += [-1, -1, -1, -1, -1]
            }
        }
        return values
    }
}

/// One `X509_STORE` with its anchors loaded. Verifications hold a reference while they use it,
/// so a reload can swap in a new one at any time.
///
/// With the system store and a hashed certificate directory, the store first holds the
/// directory lookup only (OpenSSL reads an issuer from it by name when a chain needs it; nothing
/// is parsed up front). A chain that finds no trusted issuer that way is verified again against
/// ``complete()``, the store with the bundle file parsed too (built on that first need, then
/// used for every verification): trust is always bundle plus directory, as
/// `X509_STORE_set_default_paths` gives it, only read later.
final class X509StoreSnapshot: @unchecked Sendable {
    // @unchecked: an `X509_STORE` is reference counted and locks internally; OpenSSL supports
    // verifying against one store from many threads (every `SSL_CTX` does). The directory
    // lookup locks its own cache.
    let pointer: OpaquePointer?
    /// Messages from anchors that could not be added, reported on the first failed verification.
    let setupProblems: [String]
    /// Whether the bundle file was left out of this store (see ``complete()``).
    let leavesOutBundle: Bool
    private let anchors: [X509Certificate]
    private let system: SystemTrustSource?
    private let completed = Locked<X509StoreSnapshot?>(nil)

    init(anchors: [X509Certificate], system: SystemTrustSource?, directoriesFirst: Bool) {
        self.anchors = anchors
        self.system = system
        leavesOutBundle = system != nil && directoriesFirst
        guard let store = X509_STORE_new() else {
            pointer = nil
            setupProblems = OpenSSLErrorQueue.drain()
            return
        }
        var problems: [String] = []
        if let system {
            let loaded: Bool
            if directoriesFirst {
                loaded = Self.addDirectoryLookup(store, directories: system.directories)
            } else if system.isOpenSSLDefault {
                loaded = X509_STORE_set_default_paths(store) == 1
            } else {
                // A missing file or directory is an empty source, as with the default paths.
                let file = FileManager.default.fileExists(atPath: system.file) ? system.file : nil
                let directory = system.directories.first { FileManager.default.fileExists(atPath: $0) }
                loaded = (file == nil && directory == nil) || X509_STORE_load_locations(store, file, directory) == 1
            }
            if !loaded {
                problems.append("the system trust store could not be loaded: " + OpenSSLErrorQueue.drain().joined(separator: "; "))
            }
        }
        for anchor in anchors {
            do {
                let handle = try X509Handle(der: anchor.derRepresentation)
                // X509_STORE_add_cert takes its own reference.
                if X509_STORE_add_cert(store, handle.pointer) != 1 {
                    let messages = OpenSSLErrorQueue.drain()
                    // Adding the same anchor twice is harmless.
                    if !messages.contains(where: { $0.contains("cert already in hash table") }) {
                        problems.append("anchor \(anchor.subject) was not added: " + messages.joined(separator: "; "))
                    }
                }
            } catch {
                problems.append("anchor \(anchor.subject) could not be parsed")
            }
        }
        if !anchors.isEmpty {
            // A caller-supplied anchor need not be self-signed (a pinned private intermediate,
            // a self-signed leaf): let the chain stop at any certificate in the store.
            X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        }
        pointer = store
        setupProblems = problems
    }

    /// OpenSSL's by-name lookup in the certificate directories (what `X509_STORE_set_default_paths`
    /// adds for the directory, without the bundle).
    private static func addDirectoryLookup(_ store: OpaquePointer, directories: [String]) -> Bool {
        guard let lookup = X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir()) else { return false }
        for directory in directories where FileManager.default.fileExists(atPath: directory) {
            guard X509_LOOKUP_ctrl(lookup, X509_L_ADD_DIR, directory, Int(X509_FILETYPE_PEM), nil) == 1 else { return false }
        }
        return true
    }

    /// The store with the bundle file too, when this one left it out (nil otherwise): built on
    /// first use, then kept for as long as this snapshot is current.
    func complete() -> X509StoreSnapshot? {
        guard leavesOutBundle else { return nil }
        if let built = completed.withLock({ $0 }) { return built }
        let fresh = X509StoreSnapshot(anchors: anchors, system: system, directoriesFirst: false)
        return completed.withLock { built in
            // Two first callers may both build one; keep whichever came first.
            if let built { return built }
            built = fresh
            return fresh
        }
    }

    /// Whether the bundle file has been parsed for this snapshot (directly or by ``complete()``).
    var hasParsedBundle: Bool {
        !leavesOutBundle || completed.withLock { $0 != nil }
    }

    /// The complete store if it was already built, else this one: once the bundle has been
    /// parsed, every verification uses it (one verification instead of a miss and a retry).
    var preferred: X509StoreSnapshot {
        completed.withLock { $0 } ?? self
    }

    deinit {
        if let pointer { X509_STORE_free(pointer) }
    }
}

/// The trust store a ``TrustRoots`` verifies against, reloaded when the system store changes,
/// with the cache of chains verified against it.
final class TrustStore: Sendable {
    private struct State {
        var snapshot: X509StoreSnapshot?
        var stamp: [Int64]
        var checkedAt: ContinuousClock.Instant
    }

    private let anchors: [X509Certificate]
    private let system: SystemTrustSource?
    private let state: Locked<State>
    /// Chains recently verified against this store; emptied when the store is reloaded.
    let cache = VerifiedChainCache()

    init(anchors: [X509Certificate], system: SystemTrustSource?) {
        self.anchors = anchors
        self.system = system
        // Built on first use: `TrustRoots.system` is a global that many processes never use.
        self.state = Locked(State(snapshot: nil, stamp: [], checkedAt: .now))
    }

    /// The store to verify against now. With the system store, a cheap check (a few `stat`s, at
    /// most once per ``SystemTrustSource/checkInterval``) reloads it when its files changed,
    /// and forgets every cached verification.
    func current() -> X509StoreSnapshot {
        let now = ContinuousClock.now
        let (snapshot, checkDue, knownStamp) = state.withLock { state -> (X509StoreSnapshot?, Bool, [Int64]) in
            guard let system, state.snapshot != nil else { return (state.snapshot, false, state.stamp) }
            guard now - state.checkedAt >= system.checkInterval else { return (state.snapshot, false, state.stamp) }
            state.checkedAt = now   // one caller looks; the others go on with the current store
            return (state.snapshot, true, state.stamp)
        }
        if let snapshot, !checkDue { return snapshot }
        let stamp = system?.stamp() ?? []
        if let snapshot, stamp == knownStamp { return snapshot }
        let fresh = X509StoreSnapshot(anchors: anchors, system: system, directoriesFirst: system?.looksUpDirectoriesFirst ?? false)
        let installed = state.withLock { state -> X509StoreSnapshot in
            // Two first callers may both build one; keep whichever came first.
            if snapshot == nil, let existing = state.snapshot { return existing }
            state.snapshot = fresh
            state.stamp = stamp
            state.checkedAt = now
            return fresh
        }
        if snapshot != nil { cache.removeAll() }
        return installed
    }
}
