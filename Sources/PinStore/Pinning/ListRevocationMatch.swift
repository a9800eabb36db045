/// Which entry of the signed list's `revocations` section refused a connection
/// (``PinningFailure/Reason/revokedByList(_:)``).
public struct ListRevocationMatch: Sendable, Hashable, CustomStringConvertible {
    /// What the entry names. Not an enum: a minor release may add kinds; compare
    /// (`match.kind == .key`) or switch with a `default`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the entry's `kind` in the list, e.g. `"key"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// A revoked key (SPKI SHA-256), wherever it is in the validated chain.
        public static let key = Kind("key")
        /// A revoked certificate (certificate SHA-256).
        public static let certificate = Kind("certificate")
        /// A revoked serial number of the issuer key above the certificate.
        public static let issuerSerial = Kind("issuerSerial")
    }

    /// What the matching entry names.
    public let kind: Kind
    /// The position of the revoked certificate in the validated chain (0 = leaf).
    public let depth: Int
    /// The entry's `note`, as the team wrote it.
    public let note: String?

    init(kind: Kind, depth: Int, note: String?) {
        self.kind = kind
        self.depth = depth
        self.note = note
    }

    /// `key at depth 1 ("CA key stolen")`.
    public var description: String {
        "\(kind) at depth \(depth)" + (note.map { " (\(String(reflecting: $0)))" } ?? "")
    }
}
