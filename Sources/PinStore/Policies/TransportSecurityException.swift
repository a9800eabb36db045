import Foundation

/// A TLS protocol version, named as App Transport Security names them
/// (`NSExceptionMinimumTLSVersion`).
///
/// A closed set: the four values ATS accepts for a minimum. A new TLS version would come with
/// a breaking release.
public enum TLSProtocolVersion: String, Sendable, Hashable, CaseIterable, Comparable {
    /// TLS 1.0 (`"TLSv1.0"`).
    case tlsv10 = "TLSv1.0"
    /// TLS 1.1 (`"TLSv1.1"`).
    case tlsv11 = "TLSv1.1"
    /// TLS 1.2 (`"TLSv1.2"`): the default minimum of pinned connections, as in ATS.
    case tlsv12 = "TLSv1.2"
    /// TLS 1.3 (`"TLSv1.3"`).
    case tlsv13 = "TLSv1.3"

    private var order: Int {
        switch self {
        case .tlsv10: 0
        case .tlsv11: 1
        case .tlsv12: 2
        case .tlsv13: 3
        }
    }

    /// Older versions compare lower.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.order < rhs.order }
}

/// Relaxes Apple ATS's transport minimums for one domain (an `NSExceptionDomains` entry), for a
/// server that cannot meet them yet.
///
/// Pinned connections require by default what ATS requires: TLS 1.2 or later, forward-secret
/// key exchange (ECDHE, or TLS 1.3), and certificates in the validated chain signed with SHA-256
/// or better with RSA keys of at least 2048 bits or EC keys of at least 256 bits. An exception
/// lowers only these minimums; the chain, its dates, the host name and the pins are checked
/// exactly as for every other host.
///
/// ```swift
/// var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey)
/// configuration.transportSecurityExceptions = [
///     TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv11),
///     TransportSecurityException(domain: "partner.example.net", includesSubdomains: true,
///                                requiresForwardSecrecy: false),
/// ]
/// ```
///
/// Which exception applies to a host: the most specific one whose domain covers it (an entry
/// for the host itself wins over one for a parent domain with ``includesSubdomains``); a parent
/// domain's entry covers its subdomains only with ``includesSubdomains``, and, as ATS's
/// `NSIncludesSubdomains`, only those one label below it: `partner.example.net` covers
/// `api.partner.example.net` but not `eu.api.partner.example.net`. Wildcards are refused: write the parent domain with
/// ``includesSubdomains``. An app's `NSExceptionDomains` reads in with
/// ``PinPolicyImport/transportSecurityExceptions(infoPlist:)``.
public struct TransportSecurityException: Sendable, Hashable {
    /// A host name (`legacy.example.com`) or an IP address.
    public var domain: String
    /// Whether the exception also covers the names one label below ``domain`` (ATS's
    /// `NSIncludesSubdomains`: for `example.com`, `math.example.com` but not
    /// `advanced.math.example.com`).
    public var includesSubdomains: Bool
    /// The lowest TLS version accepted (ATS's `NSExceptionMinimumTLSVersion`). Default TLS 1.2.
    public var minimumTLSVersion: TLSProtocolVersion
    /// Whether forward-secret key exchange is required (ATS's `NSExceptionRequiresForwardSecrecy`).
    /// Default true. False also lifts the certificate-strength minimums (RSA-2048 / EC-256 keys,
    /// SHA-256 signatures), as ATS's key lifts its key-length check: servers that need one of
    /// these exceptions are the old ones that need the others.
    public var requiresForwardSecrecy: Bool
    /// Whether the domain's certificates must comply with Certificate Transparency (ATS's
    /// `NSRequiresCertificateTransparency`): CT is then enforced for it whatever the signed
    /// list or ``PinStore/Configuration/certificateTransparency`` says. Default false. The
    /// one requirement here that adds a check rather than relaxing one.
    public var requiresCertificateTransparency: Bool

    /// Creates an exception; without the optional arguments it relaxes nothing.
    public init(domain: String, includesSubdomains: Bool = false, minimumTLSVersion: TLSProtocolVersion = .tlsv12,
                requiresForwardSecrecy: Bool = true, requiresCertificateTransparency: Bool = false) {
        self.domain = domain
        self.includesSubdomains = includesSubdomains
        self.minimumTLSVersion = minimumTLSVersion
        self.requiresForwardSecrecy = requiresForwardSecrecy
        self.requiresCertificateTransparency = requiresCertificateTransparency
    }
}

/// One ATS transport minimum.
///
/// A closed set: ATS's four minimums for a connection (Certificate Transparency has its own
/// mode). A new kind of check becomes a new ``PinningFailure/Reason``, not a requirement here.
public enum TransportSecurityRequirement: String, Sendable, Hashable, CaseIterable {
    /// TLS 1.2 or later (or the domain's `NSExceptionMinimumTLSVersion`).
    case minimumTLSVersion
    /// Forward-secret key exchange: ECDHE, or TLS 1.3 (`NSExceptionRequiresForwardSecrecy`).
    case forwardSecrecy
    /// Every certificate of the validated chain signed with SHA-256 or better (the anchor's
    /// self-signature is not judged).
    case certificateSignatureDigest
    /// Every certificate of the validated chain with an RSA key of at least 2048 bits or an EC
    /// key of at least 256 bits.
    case certificateKeySize
}

/// Which ATS minimum a connection failed, where, and why.
public struct TransportSecurityViolation: Sendable, Hashable, CustomStringConvertible {
    /// The requirement that failed.
    public let requirement: TransportSecurityRequirement
    /// For certificate requirements: the position in the validated chain (0 = leaf); nil for
    /// handshake requirements.
    public let depth: Int?
    /// What was found (`"RSA key of 1024 bits"`, `"signed with SHA1"`, `"the server speaks only TLSv1.1"`).
    public let detail: String

    /// Creates a violation.
    public init(requirement: TransportSecurityRequirement, depth: Int? = nil, detail: String) {
        self.requirement = requirement
        self.depth = depth
        self.detail = detail
    }

    /// The requirement, where, and what was found.
    public var description: String {
        "\(requirement.rawValue)\(depth.map { " at depth \($0)" } ?? ""): \(detail)"
    }

    /// What the operator can do, for ``PinningFailure/summary``.
    var remedy: String {
        switch requirement {
        case .minimumTLSVersion:
            "Enable TLS 1.2 or later on the server; until then, a TransportSecurityException for this domain "
                + "(NSExceptionMinimumTLSVersion) can accept an older version."
        case .forwardSecrecy:
            "If the server offers only RSA key exchange, enable ECDHE cipher suites (or TLS 1.3) on it; until then, a "
                + "TransportSecurityException for this domain with requiresForwardSecrecy false (NSExceptionRequiresForwardSecrecy = NO) "
                + "accepts RSA key exchange (and lifts the certificate-strength minimums too). Confirm the cause first: a handshake "
                + "refusal does not name it."
        case .certificateSignatureDigest:
            "Reissue the certificate signed with SHA-256 or better; until then, a TransportSecurityException for this domain "
                + "with requiresForwardSecrecy false (NSExceptionRequiresForwardSecrecy = NO) lifts the certificate-strength minimums."
        case .certificateKeySize:
            "Reissue the certificate with an RSA key of 2048 bits or more or an EC key of 256 bits or more; until then, "
                + "a TransportSecurityException for this domain with requiresForwardSecrecy false "
                + "(NSExceptionRequiresForwardSecrecy = NO) lifts the certificate-strength minimums."
        }
    }
}

/// The transport minimums that apply to one host: ATS's defaults, or those an exception relaxed.
package struct TransportSecurityRequirements: Sendable, Hashable {
    /// The lowest TLS version accepted.
    package var minimumTLSVersion: TLSProtocolVersion
    /// Whether only forward-secret key exchange is accepted.
    package var requiresForwardSecrecy: Bool
    /// Whether the certificate-strength minimums (digest, key size) are checked: they follow
    /// forward secrecy, as in ATS.
    package var checksCertificateStrength: Bool { requiresForwardSecrecy }
    /// Whether Certificate Transparency is enforced (`NSRequiresCertificateTransparency`).
    package var requiresCertificateTransparency: Bool = false

    /// ATS's defaults.
    package static let ats = TransportSecurityRequirements(minimumTLSVersion: .tlsv12, requiresForwardSecrecy: true)

    package init(minimumTLSVersion: TLSProtocolVersion, requiresForwardSecrecy: Bool, requiresCertificateTransparency: Bool = false) {
        self.minimumTLSVersion = minimumTLSVersion
        self.requiresForwardSecrecy = requiresForwardSecrecy
        self.requiresCertificateTransparency = requiresCertificateTransparency
    }

    init(_ exception: TransportSecurityException) {
        self.init(minimumTLSVersion: exception.minimumTLSVersion, requiresForwardSecrecy: exception.requiresForwardSecrecy,
                  requiresCertificateTransparency: exception.requiresCertificateTransparency)
    }

    /// The stricter of the two in each requirement: what holds for every host a connection
    /// might be for.
    func union(_ other: TransportSecurityRequirements) -> TransportSecurityRequirements {
        TransportSecurityRequirements(minimumTLSVersion: max(minimumTLSVersion, other.minimumTLSVersion),
                                      requiresForwardSecrecy: requiresForwardSecrecy || other.requiresForwardSecrecy,
                                      requiresCertificateTransparency: requiresCertificateTransparency || other.requiresCertificateTransparency)
    }
}
