import Foundation

extension PinStore {
    /// What a store does with the pins of a list that is past its own `expires`.
    ///
    /// The default, ``refusePins``, is what the list's signer asked for: `expires` says "do not
    /// rely on this list after this date", exactly as an entry's `expires` does for one pin, and
    /// a store that kept the pins would let whoever blocks or replays the list download (a
    /// freeze attack) keep a withdrawn certificate pinned, silently. Refusing turns that into a
    /// loud, visible outage instead (hosts pinned only by the expired list are refused until a
    /// fresh list arrives; the fallback list and static policies still apply), which the
    /// `pinstore_list_expired` gauge and a log line announce. Teams that value availability
    /// over that guarantee choose ``keepPins`` and alert on the gauge.
    ///
    /// A closed set: an expired list's pins either count or do not.
    public enum ExpiredListPolicy: Sendable, Hashable {
        /// The expired list's pins no longer count (fail closed). The default.
        case refusePins
        /// The expired list's pins keep counting until a fresh list replaces them (each pin
        /// still ends at its own `expires`); the expiry is only reported.
        case keepPins
    }

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
        /// for development and tests: the list is signed, so everything but TLS is exercised),
        /// or a `file:` URL for a list a fleet delivers as a file (``FileListFetcher``; static
        /// mode only, since a file cannot answer a challenge).
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
        /// The total deadline, in seconds, of every download the store makes: the list, the key
        /// documents and CRLs. The library keeps it itself, from the request to the last byte,
        /// however the server paces its answer (FoundationNetworking's own resource timeout is
        /// not enforced on Linux): a download still running then is cancelled, its connection
        /// closed, and it fails with ``PinStoreError/Code/deadlineExceeded`` (a CRL with
        /// ``CRLUnavailable/Code/deadlineExceeded``). A CRL download may outlive a handshake's
        /// ``crlFetchBudget`` in the background up to this. Default 20; positive and finite.
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
        /// Further list-signing public keys (same encodings as ``publicKey``): with
        /// ``publicKey`` they form the key set the app ships with. Default none (one key, as
        /// before). Set it after `init`.
        ///
        /// ```swift
        /// var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: keyA)
        /// configuration.additionalPublicKeys = [keyB, keyC]
        /// configuration.signatureThreshold = 2          // any two of A, B, C sign each list
        /// configuration.keyDocumentURL = keysURL        // and may rotate them (key documents)
        /// ```
        public var additionalPublicKeys: [String] = []
        /// How many distinct keys of the set must sign a list (its whole-list signatures, or a
        /// challenge-mode response). Default 1. Above 1, a static list needs whole-list
        /// signatures (`pinstore sign` with several `--key`s). Set it after `init`.
        public var signatureThreshold: Int = 1
        /// The key document version the configured key set stands for: key documents up to it
        /// are not needed, the next one must be signed by a threshold of these keys. Raise it
        /// when a release ships the keys of a newer key document. Default 1. Set it after `init`.
        public var trustedKeyVersion: Int64 = 1
        /// Where the list server publishes its signed key documents (the README's "Key documents and list expiry"):
        /// before each list download the store follows them from its trusted version, so that
        /// the list-signing keys rotate without a release. https, or http to a loopback host.
        /// Default none: the configured keys are the only ones, as before. Set it after `init`.
        public var keyDocumentURL: URL? = nil
        /// What happens to the pins of the list in force once that list is past its own
        /// `expires` (lists without one never expire). Default ``ExpiredListPolicy/refusePins``.
        /// Set it after `init`.
        public var expiredListPolicy: ExpiredListPolicy = .refusePins
        /// The shortest time, in seconds, between two list downloads that refusals trigger
        /// (`updateOnMismatch`, `updateOnEmpty`): an impostor, or a flood of connections to
        /// unpinned hosts, causes at most one download per interval, after up to five quick
        /// looks 10 to 30 seconds apart while a refusal's download brings nothing new. Default
        /// 60; at least 1 (a few seconds for a rotation drill). Explicit ``PinStore/update(mode:)`` calls and
        /// scheduled updates never wait for it: after a late publication an operator forces a
        /// download with `await store.update(mode: .forced)` (from an admin route, say). Set it
        /// after `init`.
        public var refusalUpdateInterval: TimeInterval = 60
        /// The Certificate Transparency mode of the hosts the signed list's
        /// `certificateTransparency` section does not name (``CertificateTransparencyMode``).
        /// Default ``CertificateTransparencyMode/off``: CT needs the team's log list in the signed
        /// list (<doc:CertificateTransparency>). An ATS exception with
        /// ``TransportSecurityException/requiresCertificateTransparency`` enforces CT for its
        /// domain whatever this says. Set it after `init`.
        public var certificateTransparency: CertificateTransparencyMode = .off
        /// The CT profile when the signed list names none. Default ``CertificateTransparencyProfile/chrome``.
        public var certificateTransparencyProfile: CertificateTransparencyProfile = .chrome
        /// Whether chains that lead to an anchor the app configured (``TrustRoots/anchors(_:includingSystem:)``,
        /// a private CA) are checked for CT too. Default false: as browsers exempt locally
        /// trusted roots, such chains are skipped (counted as `skipped`); private CAs do not log.
        public var certificateTransparencyForPrivateAnchors: Bool = false
        /// How often, in seconds, ``PinStore/run()`` looks whether a `file:` list or key
        /// document file changed (one `stat` each), and updates at once when it did. Default 10;
        /// at least 0.1. Unused for https lists. Set it after `init`.
        public var listFileCheckInterval: TimeInterval = 10
        /// The CRL mode of the hosts the signed list's `crl` section does not name
        /// (``CRLCheckMode``). Default ``CRLCheckMode/off``. Checked by the chain-aware adapters
        /// (PinStoreNIO's verifier, the pinned URLSession, gRPC); AsyncHTTPClient sees only the
        /// leaf and refuses such hosts (<doc:Revocation>). Set it after `init`.
        public var crlMode: CRLCheckMode = .off
        /// The longest, in seconds, a handshake waits for the CRLs its chain needs that are not
        /// cached (the fetch goes on in the background past it; the check then fails open or
        /// closed as the host's mode says). Default 2; 0.1 to 30. Set it after `init`.
        public var crlFetchBudget: TimeInterval = 2
        /// The largest CRL read, in bytes; a larger one is unavailable. Default 8 MiB (public
        /// CAs' partitioned CRLs are far smaller). Set it after `init`.
        public var crlMaximumSize: Int = 8 << 20

        /// Whether a static list must carry a whole-list signature: ``requireListSignature``, or
        /// any Certificate Transparency setting, since only that signature covers the list's CT
        /// section (whoever answers the unsigned list request could otherwise strip it, log
        /// list and all, and with it every CT check).
        var requiresWholeListSignature: Bool {
            requireListSignature || certificateTransparency != .off || crlMode != .off
                || transportSecurityExceptions.contains(where: \.requiresCertificateTransparency)
        }

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

        /// The file the store keeps the key documents it accepted in (next to ``storeFileURL``).
        public var keyDocumentFileURL: URL {
            let directory = storageDirectory ?? Self.defaultStorageDirectory
            return directory.appendingPathComponent("pinstore-\(identifier).keys.json")
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

        func validated() throws(PinStoreError) -> (ListKeySet, PinIndex, StaticPins) {
            guard serviceURL.isAcceptableListURL(allowingLoopbackHTTP: true) || serviceURL.isAbsoluteFileURL else {
                throw PinStoreError(.invalidConfiguration, "serviceURL \(serviceURL.absoluteString) must be https (plain http is allowed only for a loopback host), or a file: URL with an absolute path.")
            }
            if serviceURL.isFileURL, useChallenge {
                throw PinStoreError(.invalidConfiguration, "serviceURL \(serviceURL.absoluteString) is a file, which cannot answer a challenge: a file-delivered list is a static list (useChallenge false, signed with `pinstore sign`).")
            }
            guard listFileCheckInterval.isFinite, listFileCheckInterval >= 0.1 else {
                throw PinStoreError(.invalidConfiguration, "listFileCheckInterval must be at least 0.1 seconds.")
            }
            let key: P256PublicKey
            do {
                key = try P256PublicKey(configuredString: publicKey)
            } catch {
                throw PinStoreError(.invalidConfiguration, "publicKey: \(error.reason)", openSSLErrors: error.openSSLErrors)
            }
            var keys = [key]
            for (index, text) in additionalPublicKeys.enumerated() {
                do {
                    keys.append(try P256PublicKey(configuredString: text))
                } catch {
                    throw PinStoreError(.invalidConfiguration, "additionalPublicKeys[\(index)]: \(error.reason)", openSSLErrors: error.openSSLErrors)
                }
            }
            let keySet: ListKeySet
            do {
                keySet = try ListKeySet(version: trustedKeyVersion, keys: keys, threshold: signatureThreshold, expires: nil)
            } catch {
                throw PinStoreError(.invalidConfiguration, "publicKey, additionalPublicKeys, signatureThreshold, trustedKeyVersion: \(error.reason)")
            }
            if let keyDocumentURL, !keyDocumentURL.isAcceptableListURL(allowingLoopbackHTTP: true), !keyDocumentURL.isAbsoluteFileURL {
                throw PinStoreError(.invalidConfiguration, "keyDocumentURL \(keyDocumentURL.absoluteString) must be https (plain http is allowed only for a loopback host), or a file: URL with an absolute path.")
            }
            guard !identifier.isEmpty, identifier.count <= 100,
                  identifier.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) }),
                  !identifier.hasPrefix(".") else {
                throw PinStoreError(.invalidConfiguration, "identifier \"\(identifier)\" must be 1-100 ASCII letters, digits, '.', '_' or '-', not starting with '.'.")
            }
            guard periodicUpdateInterval > 0, expirationUpdateThreshold >= 0, requestTimeout > 0, maximumListSize > 0 else {
                throw PinStoreError(.invalidConfiguration, "periodicUpdateInterval, requestTimeout and maximumListSize must be positive, expirationUpdateThreshold not negative.")
            }
            guard requestTimeout.isFinite else {
                throw PinStoreError(.invalidConfiguration, "requestTimeout must be finite: it is the total deadline of every download (the list, the key documents, CRLs); \(requestTimeout) would let a slow server hold one open forever.")
            }
            guard crlFetchBudget.isFinite, (0.1...30).contains(crlFetchBudget), crlMaximumSize > 0 else {
                throw PinStoreError(.invalidConfiguration, "crlFetchBudget must be 0.1 to 30 seconds (a handshake waits that long at most), crlMaximumSize positive.")
            }
            guard refusalUpdateInterval.isFinite, refusalUpdateInterval >= 1 else {
                throw PinStoreError(.invalidConfiguration, "refusalUpdateInterval must be at least 1 second (it bounds the downloads an impostor can cause).")
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
            return (keySet, fallback, try StaticPins(configuration: self))
        }
    }
}
