import Foundation

/// One pin: what a certificate in the validated chain must be, or hold, to match.
///
/// ```swift
/// .certificate(sha256Base64: "r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=")   // today's list pins, at depth 0
/// .leafKey(spkiSHA256Base64: "9Bjf0EyzJ2qVhNXH6IuplC6glEuU0Xf5WcNQy5Fz9jM=")   // survives a renewal with the same key
/// .caKey(spkiSHA256Base64: "C5+lpZ7tcVwmwQIMcRtPbsQtWLABXhQzejna0wHFr8M=")     // any CA above the leaf (NSPinnedCAIdentities)
/// .key(spkiSHA256Base64: "...", depth: 1)                                          // the key at one chain position
/// ```
///
/// Digests are Base64 of SHA-256: over the whole certificate DER for ``certificate(sha256Base64:depth:)``,
/// over the SubjectPublicKeyInfo DER (`SPKI-SHA256-BASE64`, what `pinstore fingerprint` prints)
/// for the key identities. A malformed digest is a configuration error when the store is made.
public struct PinIdentity: Sendable, Hashable, CustomStringConvertible {
    /// Where in the validated chain (leaf at depth 0, anchor last) the pin looks, and at what.
    ///
    /// Not an enum: a minor release may add kinds of pin (other digests, other positions).
    /// Compare (`pin.kind == .leafKey`), or match on ``code`` with a `default`; the position
    /// of ``certificate(depth:)`` and ``key(depth:)`` is ``depth``.
    public struct Kind: Sendable, Hashable {
        /// Which kind of pin this is, without its position. A minor release may add members.
        public struct Code: Sendable, Hashable, CustomStringConvertible {
            /// A stable name: the kind's static member, e.g. `"leafKey"`.
            public let name: String
            init(_ name: String) { self.name = name }
            /// ``name``.
            public var description: String { name }

            /// ``Kind/certificate(depth:)``.
            public static let certificate = Code("certificate")
            /// ``Kind/leafKey``.
            public static let leafKey = Code("leafKey")
            /// ``Kind/caKey``.
            public static let caKey = Code("caKey")
            /// ``Kind/anyKey``.
            public static let anyKey = Code("anyKey")
            /// ``Kind/key(depth:)``.
            public static let key = Code("key")
        }

        /// The kinds this version knows. Internal, so that the one meaning of a pin
        /// (``ChainEvidence``) must answer every kind added here.
        enum Backing: Sendable, Hashable {
            case certificate(depth: Int?)
            case leafKey
            case caKey
            case anyKey
            case key(depth: Int)
        }

        let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// The whole certificate's SHA-256 at `depth`, or at any position when `depth` is nil.
        public static func certificate(depth: Int?) -> Kind { Kind(.certificate(depth: depth)) }
        /// The leaf's SPKI SHA-256 (Apple's `NSPinnedLeafIdentities`).
        public static let leafKey = Kind(.leafKey)
        /// The SPKI SHA-256 of any certificate above the leaf, up to and including the anchor
        /// (Apple's `NSPinnedCAIdentities`; Android's and OkHttp's pins also match the leaf:
        /// use ``anyKey`` for those).
        public static let caKey = Kind(.caKey)
        /// The SPKI SHA-256 of any certificate in the chain, the leaf included (Android's
        /// `pin digest="SHA-256"`, OkHttp's `sha256/`).
        public static let anyKey = Kind(.anyKey)
        /// The SPKI SHA-256 of the certificate at `depth`.
        public static func key(depth: Int) -> Kind { Kind(.key(depth: depth)) }

        /// Which kind of pin this is.
        public var code: Code {
            switch backing {
            case .certificate: .certificate
            case .leafKey: .leafKey
            case .caKey: .caKey
            case .anyKey: .anyKey
            case .key: .key
            }
        }

        /// The chain position of ``certificate(depth:)`` and ``key(depth:)`` pins; nil for a
        /// certificate pin at any position and for the kinds without one.
        public var depth: Int? {
            switch backing {
            case .certificate(let depth): depth
            case .key(let depth): depth
            case .leafKey, .caKey, .anyKey: nil
            }
        }

        /// Whether `kind` is of the kind `code`, whatever its position (`case .certificate:`).
        public static func ~= (code: Code, kind: Kind) -> Bool { kind.code == code }
    }

    /// Where the pin looks.
    public let kind: Kind
    /// Base64 of the SHA-256 digest.
    public let sha256Base64: String

    /// Creates a pin of `kind`.
    public init(kind: Kind, sha256Base64: String) {
        self.kind = kind
        self.sha256Base64 = sha256Base64
    }

    /// A certificate fingerprint pin (the list's kind) at `depth`, or at any position when nil.
    public static func certificate(sha256Base64: String, depth: Int? = 0) -> PinIdentity {
        PinIdentity(kind: .certificate(depth: depth), sha256Base64: sha256Base64)
    }

    /// A leaf public-key pin.
    public static func leafKey(spkiSHA256Base64: String) -> PinIdentity {
        PinIdentity(kind: .leafKey, sha256Base64: spkiSHA256Base64)
    }

    /// A CA public-key pin: any certificate above the leaf in the validated chain.
    public static func caKey(spkiSHA256Base64: String) -> PinIdentity {
        PinIdentity(kind: .caKey, sha256Base64: spkiSHA256Base64)
    }

    /// A public-key pin on any certificate of the validated chain, the leaf included.
    public static func anyKey(spkiSHA256Base64: String) -> PinIdentity {
        PinIdentity(kind: .anyKey, sha256Base64: spkiSHA256Base64)
    }

    /// A public-key pin at one chain position.
    public static func key(spkiSHA256Base64: String, depth: Int) -> PinIdentity {
        PinIdentity(kind: .key(depth: depth), sha256Base64: spkiSHA256Base64)
    }

    /// OkHttp-style text: `sha256/<Base64> (leaf key)`, `certificate <Base64> at depth 1`.
    public var description: String {
        switch kind.backing {
        case .certificate(let depth): "certificate \(sha256Base64) \(depth.map { "at depth \($0)" } ?? "at any depth")"
        case .leafKey: "sha256/\(sha256Base64) (leaf key)"
        case .caKey: "sha256/\(sha256Base64) (CA key)"
        case .anyKey: "sha256/\(sha256Base64) (key at any depth)"
        case .key(let depth): "sha256/\(sha256Base64) (key at depth \(depth))"
        }
    }
}

/// A ``PinIdentity`` checked and decoded once, when the store is made.
struct CompiledIdentity: Sendable {
    let identity: PinIdentity
    let digest: Digest32

    init(_ identity: PinIdentity, policy: String) throws(PinStoreError) {
        guard let data = Base64.decodeStrict(identity.sha256Base64), let digest = Digest32(data) else {
            throw PinStoreError(.invalidConfiguration, "policy \(policy): pin \(String(reflecting: identity.sha256Base64)) is not Base64 of a 32-byte SHA-256 digest.")
        }
        switch identity.kind.backing {
        case .certificate(let depth?) where depth < 0, .key(let depth) where depth < 0:
            throw PinStoreError(.invalidConfiguration, "policy \(policy): pin depth \(depth) is negative.")
        default: break
        }
        self.identity = identity
        self.digest = digest
    }

    /// Whether the pin is about the leaf only (Apple's leaf category).
    var isLeafPin: Bool {
        switch identity.kind.backing {
        case .certificate(.some(0)), .leafKey, .key(0): true
        default: false
        }
    }
}
