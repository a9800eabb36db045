import Foundation

/// One pin of a fingerprint list: "a certificate whose SHA-256 is `fingerprint` is the right
/// one for `name` until `expires`".
public struct FingerprintEntry: Sendable, Hashable {
    /// The host name the pin belongs to; may be a `*.` wildcard covering exactly one label.
    public let name: String
    /// SHA-256 of the pinned certificate's DER (32 bytes).
    public let fingerprint: Data
    /// The first second at which the entry is no longer valid (Unix seconds).
    public let expires: Int64
    /// Position in the presented chain of the pinned certificate: 0 = leaf, 1 = its issuer...
    public let depth: Int
    /// What ``fingerprint`` is the SHA-256 of. The wire member `"pin"`: absent for
    /// ``Kind/certificate`` (every list deployed servers send), `"spki"` or `"ca-spki"`.
    public let kind: Kind

    /// What an entry's digest covers.
    ///
    /// A closed set for the list format: these are the values of the wire member `"pin"`, and a
    /// store refuses an entry with one it does not know, so a new kind is a new list format and
    /// comes with a breaking release.
    public enum Kind: String, Sendable, Hashable {
        /// The whole certificate DER at ``FingerprintEntry/depth`` (today's entries).
        case certificate
        /// The SubjectPublicKeyInfo DER of the certificate at ``FingerprintEntry/depth``: a key pin.
        case publicKey = "spki"
        /// The SubjectPublicKeyInfo DER of any certificate above the leaf (a CA identity);
        /// `depth` is not used.
        case caPublicKey = "ca-spki"
    }

    /// Creates an entry. `expires` is in Unix seconds.
    public init(name: String, fingerprint: Data, expires: Int64, depth: Int = 0, kind: Kind = .certificate) {
        self.name = name
        self.fingerprint = fingerprint
        self.expires = expires
        self.depth = depth
        self.kind = kind
    }

    /// ``expires`` as a date.
    public var expirationDate: Date { Date(timeIntervalSince1970: TimeInterval(expires)) }

    /// Whether the entry is still valid at `date` (it is dead from the `expires` second on).
    public func isValid(at date: Date) -> Bool {
        date.timeIntervalSince1970 < TimeInterval(expires)
    }

    /// The bytes a static-mode list signs for this entry:
    /// `name + "&" + base64(fingerprint) + "&" + expires` in UTF-8.
    public var signedBytes: Data {
        Data("\(name)&\(fingerprint.base64EncodedString())&\(expires)".utf8)
    }
}
