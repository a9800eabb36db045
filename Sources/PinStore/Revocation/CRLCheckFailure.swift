import Foundation

/// Why no trustworthy CRL answered for a certificate: the CRL check then fails open or closed
/// as the host's ``CRLCheckMode`` says, and never counts it as "not revoked".
public struct CRLUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which problem this is; compare against the static members (a minor release may add some).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// A stable name, e.g. `"badSignature"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }

        /// The bytes are not one DER CRL.
        public static let malformed = Code("malformed")
        /// The CRL's signature does not verify with the issuer's key from the validated chain.
        public static let badSignature = Code("badSignature")
        /// The CRL names another issuer than the certificate's, or the issuer may not sign CRLs.
        public static let wrongIssuer = Code("wrongIssuer")
        /// The CRL's `nextUpdate` has passed: it no longer says what is revoked now.
        public static let expired = Code("expired")
        /// The CRL's `thisUpdate` is in the future, or it has no `nextUpdate`.
        public static let badDates = Code("badDates")
        /// A delta CRL (`deltaCRLIndicator`): PinStore reads complete CRLs only.
        public static let deltaCRLUnsupported = Code("deltaCRLUnsupported")
        /// An indirect CRL, or one limited to some revocation reasons or to attribute
        /// certificates: PinStore reads CRLs of one issuer covering every reason only.
        public static let scopeUnsupported = Code("scopeUnsupported")
        /// The CRL's issuing distribution point does not cover this certificate (another
        /// partition, or CA certificates only for a leaf).
        public static let outOfScope = Code("outOfScope")
        /// A critical extension PinStore does not know.
        public static let unsupportedCriticalExtension = Code("unsupportedCriticalExtension")
        /// Larger than ``PinStore/Configuration/crlMaximumSize``.
        public static let tooLarge = Code("tooLarge")
        /// The download failed (unreachable, HTTP error, a redirect away from the distribution
        /// point's scheme, host and port).
        public static let fetchFailed = Code("fetchFailed")
        /// The download did not finish within ``PinStore/Configuration/requestTimeout``, however
        /// its server paced the answer; it was cancelled and its connection closed.
        public static let deadlineExceeded = Code("deadlineExceeded")
        /// Not fetched within ``PinStore/Configuration/crlFetchBudget`` (or not yet).
        public static let notFetchedYet = Code("notFetchedYet")
        /// The adapter sees only the leaf (AsyncHTTPClient): no issuer, so no CRL can be
        /// verified. Call the host through PinStoreNIO.
        public static let needsValidatedChain = Code("needsValidatedChain")
    }

    /// Which problem this is.
    public let code: Code
    /// The distribution point URL the CRL came (or should have come) from.
    public let url: String
    /// What went wrong, in words.
    public let detail: String

    init(_ code: Code, url: String, _ detail: String) {
        self.code = code
        self.url = url
        self.detail = detail
    }

    /// The code, the URL and the detail.
    public var description: String { "\(code) (\(url)): \(detail)" }
}

/// What the CRL check holds against a validated chain (``PinningFailure/Reason/crlCheckFailed(_:)``):
/// a certificate its CA revoked, or a certificate whose CRL could not be had.
public struct CRLCheckFailure: Sendable, Hashable, CustomStringConvertible {
    /// The chain position of the certificate (0: the leaf).
    public let depth: Int
    /// When the CA revoked it; nil when the CRL was unavailable instead.
    public let revokedAt: Date?
    /// Why the CRL was unavailable; nil when the certificate is revoked.
    public let unavailable: CRLUnavailable?

    /// Whether the certificate is revoked (else its CRL was unavailable).
    public var isRevoked: Bool { revokedAt != nil }

    static func revoked(depth: Int, at date: Date) -> CRLCheckFailure {
        CRLCheckFailure(depth: depth, revokedAt: date, unavailable: nil)
    }

    static func unavailable(depth: Int, _ why: CRLUnavailable) -> CRLCheckFailure {
        CRLCheckFailure(depth: depth, revokedAt: nil, unavailable: why)
    }

    /// In words.
    public var description: String {
        if let revokedAt {
            return "the certificate at depth \(depth) was revoked by its CA at \(ISO8601DateFormatter().string(from: revokedAt))"
        }
        return "no usable CRL for the certificate at depth \(depth): \(unavailable.map { "\($0)" } ?? "unknown")"
    }
}
