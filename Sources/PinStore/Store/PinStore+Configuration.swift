import Foundation

extension PinStore {
    /// How a ``PinStore`` finds, verifies and keeps its list.
    ///
    /// ```swift
    /// let configuration = PinStore.Configuration(
    ///     serviceURL: URL(string: "https://pins.example.net/list.json")!,
    ///     publicKey: "BC3kV9OIDnMu...Nv+XE=",
    ///     expectedCommonNames: ["api.example.com"])
    /// ```
    public struct Configuration: Sendable {
        /// Where the signed list is served. Must be https (plain http only on a loopback host,
        /// for development and tests: the list is signed, so everything but TLS is exercised).
        public var serviceURL: URL
        /// The list-signing public key: Base64 of the X9.63 P-256 point, or a PEM/DER SPKI.
        public var publicKey: String
        /// Whether the server is in challenge mode (a fresh challenge per request, the whole
        /// response signed) rather than serving a static list with per-entry signatures.
        public var useChallenge: Bool
        /// When set, only these host names can ever validate as trusted.
        public var expectedCommonNames: [String]?
        /// Names the store file, so several stores can live side by side. Letters, digits,
        /// `.`, `_` and `-` only.
        public var identifier: String
        /// A list shipped inside the app (static-mode JSON), consulted after the downloaded
        /// one. Its signatures are not checked; it must parse.
        public var fallbackData: Data?
        /// Longest time between silent updates (seconds). Default 7 days.
        public var periodicUpdateInterval: TimeInterval
        /// When the earliest pin expires sooner than this, updates come sooner (seconds).
        /// Default 14 days.
        public var expirationUpdateThreshold: TimeInterval
        /// Where the store file lives; nil for the per-user application-support folder.
        public var storageDirectory: URL?
        /// Seconds before a list download is abandoned. Default 20.
        public var requestTimeout: TimeInterval
        /// Bytes past which a list body is refused without reading on. Default 1 MiB.
        public var maximumListSize: Int
        /// Static mode: whether every list must carry a valid whole-list signature (the
        /// `listSignature` member `pinstore sign` writes, covering the whole body and its
        /// `timestamp`). Lists with one are always checked, and their timestamp is a rollback
        /// floor; requiring it also refuses lists without one, which closes replay of older
        /// lists, splicing of entries from different lists and changes of `depth`. Default
        /// false (the deployed list format has no such member).
        public var requireListSignature: Bool
        /// Pins configured in code, beside the signed list (see ``PinPolicy`` for how they
        /// combine). Each needs at least two distinct pins. Default none.
        public var policies: [PinPolicy]
        /// SPKI SHA-256 digests (Base64) refused for every host, at any chain position, whatever
        /// else matches: a compromised key, a known interception product. Checked before any
        /// pin. Adapters that see only the leaf (AsyncHTTPClient) refuse every connection while
        /// this is set, as they cannot see the keys above the leaf. Default none.
        public var deniedPublicKeys: [String]
        /// Whether pin failures refuse connections (the default) or are only reported: report-only
        /// (audit) mode for the whole store or for the signed list's pins (see ``Enforcement``;
        /// a single policy: ``PinPolicy/reportOnly``). Set it after `init`.
        public var enforcement: Enforcement = .enforced
        /// Per-domain relaxations of the ATS transport minimums that every pinned connection
        /// meets by default (TLS 1.2, forward secrecy, SHA-256 signatures, RSA-2048/EC-256 keys);
        /// see ``TransportSecurityException``. Default none. Set it after `init`.
        public var transportSecurityExceptions: [TransportSecurityException] = []
        /// Where pin-failure reports go (``PinFailureReport``, POSTed as JSON in the background
        /// through an unpinned session of their own, at most once a day per identical report).
        /// https, or http to a loopback host (a local collector such as `pinstore reports`).
        /// Default none: no report is made. Set it after `init`.
        public var reportURI: URL? = nil

        /// Creates a configuration; every value after `publicKey` has a default.
        public init(serviceURL: URL,
                    publicKey: String,
                    useChallenge: Bool = false,
                    expectedCommonNames: [String]? = nil,
                    identifier: String = "default",
                    fallbackData: Data? = nil,
                    periodicUpdateInterval: TimeInterval = 7 * 86_400,
                    expirationUpdateThreshold: TimeInterval = 14 * 86_400,
                    storageDirectory: URL? = nil,
                    requestTimeout: TimeInterval = 20,
                    maximumListSize: Int = 1 << 20,
                    requireListSignature: Bool = false,
                    policies: [PinPolicy] = [],
                    deniedPublicKeys: [String] = []) {
            self.serviceURL = serviceURL
            self.publicKey = publicKey
            self.useChallenge = useChallenge
            self.expectedCommonNames = expectedCommonNames
            self.identifier = identifier
            self.fallbackData = fallbackData
            self.periodicUpdateInterval = periodicUpdateInterval
            self.expirationUpdateThreshold = expirationUpdateThreshold
            self.storageDirectory = storageDirectory
            self.requestTimeout = requestTimeout
            self.maximumListSize = maximumListSize
            self.requireListSignature = requireListSignature
            self.policies = policies
            self.deniedPublicKeys = deniedPublicKeys
        }

        /// The file the store keeps its list in.
        public var storeFileURL: URL {
            let directory = storageDirectory ?? Self.defaultStorageDirectory
            return directory.appendingPathComponent("pinstore-\(identifier).json")
        }

        /// The per-user default: `<Application Support>/PinStore` (on Linux
        /// `$XDG_DATA_HOME/PinStore`, usually `~/.local/share/PinStore`).
        public static var defaultStorageDirectory: URL {
            let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? FileManager.default.temporaryDirectory
            return base.appendingPathComponent("PinStore")
        }

        func validated() throws(PinStoreError) -> (P256PublicKey, PinIndex, StaticPins) {
            guard serviceURL.isAcceptableListURL(allowingLoopbackHTTP: true) else {
                throw PinStoreError(.invalidConfiguration, "serviceURL \(serviceURL.absoluteString) must be https (plain http is allowed only for a loopback host).")
            }
            let key: P256PublicKey
            do {
                key = try P256PublicKey(configuredString: publicKey)
            } catch {
                throw PinStoreError(.invalidConfiguration, "publicKey: \(error.reason)", openSSLErrors: error.openSSLErrors)
            }
            guard !identifier.isEmpty, identifier.count <= 100,
                  identifier.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) }),
                  !identifier.hasPrefix(".") else {
                throw PinStoreError(.invalidConfiguration, "identifier \"\(identifier)\" must be 1-100 ASCII letters, digits, '.', '_' or '-', not starting with '.'.")
            }
            guard periodicUpdateInterval > 0, expirationUpdateThreshold >= 0, requestTimeout > 0, maximumListSize > 0 else {
                throw PinStoreError(.invalidConfiguration, "periodicUpdateInterval, requestTimeout and maximumListSize must be positive, expirationUpdateThreshold not negative.")
            }
            if let bad = expectedCommonNames?.first(where: { (try? HostName($0)) == nil }) {
                throw PinStoreError(.invalidConfiguration, "expectedCommonNames: \(HostName.problem(bad))")
            }
            // The fallback's entries and parse die here: only the index leaves.
            var fallback = PinIndex.empty
            if let fallbackData {
                do {
                    fallback = PinIndex(entries: try FingerprintListDocument(body: fallbackData).entries.map(\.entry))
                } catch {
                    throw PinStoreError(.invalidConfiguration, "fallbackData: \(error.reason)")
                }
            }
            try validateReportURI()
            return (key, fallback, try StaticPins(configuration: self))
        }
    }
}
