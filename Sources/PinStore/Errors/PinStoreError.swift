/// The error every PinStore API throws.
///
/// Errors are equal when their ``code`` is equal, so tests and callers can match on the code
/// and show ``reason`` to people. ``reason`` always says what went wrong and, where there is
/// one, what to do next.
///
/// ```swift
/// do {
///     _ = try P256PublicKey(configuredString: "not a key")
/// } catch let error as PinStoreError where error.code == .invalidBase64 {
///     print(error.reason)
/// }
/// ```
public struct PinStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable, human-readable name of the code, e.g. `"publicKeyNotOnCurve"`.
        public let name: String
        init(_ name: String) { self.name = name }
        public var description: String { name }

        // MARK: Input encodings
        /// Bytes that should have been Base64 were not (standard alphabet, padded).
        public static let invalidBase64 = Code("invalidBase64")
        /// A PEM document had no block of the expected kind, or a block was corrupt.
        public static let invalidPEM = Code("invalidPEM")

        // MARK: Public keys
        /// The key material has a length no P-256 key encoding has.
        public static let publicKeyWrongLength = Code("publicKeyWrongLength")
        /// The key is an elliptic-curve key on a curve other than P-256.
        public static let publicKeyWrongCurve = Code("publicKeyWrongCurve")
        /// The key is not an elliptic-curve key at all (for example RSA).
        public static let publicKeyNotEllipticCurve = Code("publicKeyNotEllipticCurve")
        /// The encoded point is not on the P-256 curve.
        public static let publicKeyNotOnCurve = Code("publicKeyNotOnCurve")
        /// The bytes are not a parseable public key encoding.
        public static let publicKeyMalformed = Code("publicKeyMalformed")
        /// A private key could not be read, generated or used.
        public static let privateKeyInvalid = Code("privateKeyInvalid")

        // MARK: Certificates
        /// No certificate was found in the input (empty input, or a PEM file without certificates).
        public static let noCertificate = Code("noCertificate")
        /// The bytes are not a well-formed X.509 certificate.
        public static let certificateMalformed = Code("certificateMalformed")

        // MARK: Configuration
        /// The ``PinStore/Configuration`` cannot work (bad URL, key, fallback list, identifier).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// A name is not a host name (``HostName``): empty, an empty label, a space or a
        /// control character, or Unicode without an IDNA form.
        public static let invalidHostName = Code("invalidHostName")

        // MARK: Updates (each maps to an ``PinStore/UpdateResult``)
        /// The list could not be downloaded: transport failure, timeout, HTTP error status,
        /// or a refused redirect. Maps to ``PinStore/UpdateResult/networkError``.
        public static let network = Code("network")
        /// A download (the list, the key documents, a CRL) did not finish within its total
        /// deadline, ``PinStore/Configuration/requestTimeout``, however the server paced its
        /// answer; the library cancelled it and closed its connection. Maps to
        /// ``PinStore/UpdateResult/networkError``.
        public static let deadlineExceeded = Code("deadlineExceeded")
        /// The list is not in the expected format, breaks a rule (duplicate entries, a
        /// fingerprint that is not 32 bytes, an impossible `expires`), is larger than the limit,
        /// or is signed but older than the stored one (a lower signed timestamp, or none after
        /// one). A missing signature is ``invalidListSignature``. Maps to
        /// ``PinStore/UpdateResult/invalidData``.
        public static let invalidListData = Code("invalidListData")
        /// A signature is missing, malformed, or does not verify with the configured public key.
        /// Missing covers: an entry's signature (static mode), the response's signature header
        /// (challenge mode), and a static list's whole-list signature (`listSignature`) when the
        /// store requires it (``PinStore/Configuration/requireListSignature``), when the list
        /// carries a section only it covers (`certificateTransparency`, `revocations`, `crl`),
        /// or when the list in force had one (an unsigned list could be an older one replayed).
        /// Maps to ``PinStore/UpdateResult/invalidSignature``.
        public static let invalidListSignature = Code("invalidListSignature")
        /// The verified list holds no entry that is still valid. Maps to
        /// ``PinStore/UpdateResult/storeIsEmpty``.
        public static let noValidEntries = Code("noValidEntries")
        /// The store file could not be read or written.
        public static let storage = Code("storage")

        // MARK: Key documents, versions and expiry
        /// A key document (``PinStore/Configuration/keyDocumentURL``) is malformed or too
        /// large, a version is skipped or served twice, or more versions than one update follows
        /// (32) are pending. Maps to ``PinStore/UpdateResult/invalidData``.
        public static let invalidKeyDocument = Code("invalidKeyDocument")
        /// A key document is signed by fewer distinct keys than the threshold of the previous
        /// version, or of its own. Maps to ``PinStore/UpdateResult/invalidSignature``.
        public static let keyDocumentThresholdNotMet = Code("keyDocumentThresholdNotMet")
        /// A key document or a list has a lower `version` than the trusted one: a rollback.
        /// Maps to ``PinStore/UpdateResult/invalidData``.
        public static let rollback = Code("rollback")
        /// The newest key document, or a downloaded list, is past its `expires`: it could be a
        /// replay that keeps withdrawn pins or keys alive (a freeze attack). Maps to
        /// ``PinStore/UpdateResult/invalidData``.
        public static let expired = Code("expired")

        // MARK: Certificate Transparency
        /// A Certificate Transparency log key is of a kind RFC 6962 logs cannot have: an
        /// elliptic-curve key on a curve other than P-256, RSA below 2048 bits, or another
        /// algorithm.
        public static let ctLogKeyUnsupported = Code("ctLogKeyUnsupported")

        // MARK: OpenSSL
        /// OpenSSL failed in a way the input does not explain (out of memory, missing algorithm).
        public static let openSSLFailure = Code("openSSLFailure")
    }

    /// What kind of failure this is.
    public let code: Code
    /// A sentence for people: what went wrong and what to do next.
    public let reason: String
    /// The messages OpenSSL queued while the operation failed, oldest first (may be empty).
    public let openSSLErrors: [String]
    /// Where the error was raised, for logs.
    public let file: String
    /// Where the error was raised, for logs.
    public let line: Int

    /// Creates an error. OpenSSL messages are usually filled in by the OpenSSL boundary.
    public init(_ code: Code, _ reason: String, openSSLErrors: [String] = [], file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.openSSLErrors = openSSLErrors
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "\(code): \(reason)"
        if !openSSLErrors.isEmpty {
            text += " (OpenSSL: \(openSSLErrors.joined(separator: "; ")))"
        }
        return text
    }

    public static func == (lhs: PinStoreError, rhs: PinStoreError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
