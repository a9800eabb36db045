import NIOCore

/// A configuration or connection that pinning an `HTTPClient` cannot allow.
///
/// Pin refusals themselves fail requests with the `PinStore/PinningFailure` that says why;
/// this error is for what would make the pin check meaningless.
///
/// ```swift
/// do {
///     configuration = try .pinned(by: store, tlsConfiguration: tls)
/// } catch let error as PinnedHTTPClientError where error.code == .certificateVerificationDisabled {
///     // fix the TLS configuration
/// }
/// ```
public struct PinnedHTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    ///
    /// Not an enum: a minor release may refuse more configurations that would make the pin check
    /// meaningless. Compare against the static members, and keep a `default` in a `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the static member's, e.g. `"unencryptedConnection"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }
        /// ``name``, as the enum's raw value was.
        @available(*, deprecated, renamed: "name")
        public var rawValue: String { name }

        /// `certificateVerification` is `.none`: no chain, date or host check runs, so a pin
        /// check on the leaf would be the only defence.
        public static let certificateVerificationDisabled = Code("certificateVerificationDisabled")
        /// `certificateVerification` is `.noHostnameVerification` (or `.optionalVerification`):
        /// the leaf-only pin rule relies on the default host-name check.
        public static let hostnameVerificationDisabled = Code("hostnameVerificationDisabled")
        /// A connection without TLS (an `http://` URL): there is no certificate to pin.
        public static let unencryptedConnection = Code("unencryptedConnection")
        /// A TLS connection whose handler gave no peer certificate.
        public static let noPeerCertificate = Code("noPeerCertificate")
        /// The TLS configuration cannot meet ATS's transport minimums (a maximum version below
        /// TLS 1.2, cipher suites without a forward-secret one).
        public static let transportMinimumUnreachable = Code("transportMinimumUnreachable")
        /// AsyncHTTPClient would not run TLS through swift-nio-ssl on the client's event loop
        /// group (on macOS, NIOTransportServices' groups, `HTTPClient.defaultEventLoopGroup`
        /// included, do TLS in Network.framework), so the pin check could not see a certificate.
        public static let unsupportedEventLoopGroup = Code("unsupportedEventLoopGroup")
        /// A certificate of the given `TrustRoots` could not be handed to swift-nio-ssl.
        public static let invalidTrustRoots = Code("invalidTrustRoots")
        /// The store asks for Certificate Transparency for every host (its configuration's
        /// `certificateTransparency` is not `.off`, or an ATS exception requires it), and
        /// AsyncHTTPClient shows only the leaf: the SCTs are signed over the issuer, which the
        /// pinned client never sees, so CT could not be checked.
        public static let certificateTransparencyNeedsChain = Code("certificateTransparencyNeedsChain")
        /// The store checks CRLs for every host (its configuration's `crlMode` is not `.off`),
        /// and AsyncHTTPClient shows only the leaf: a CRL is verified with the issuer's key,
        /// which the pinned client never sees.
        public static let crlNeedsChain = Code("crlNeedsChain")
    }

    /// What went wrong.
    public let code: Code
    /// What it means and what to do.
    public let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    static let certificateVerificationDisabled = PinnedHTTPClientError(.certificateVerificationDisabled,
        "The TLSConfiguration has certificateVerification .none: no chain, date or host-name check would run and "
            + "pinning must never replace them. Use .fullVerification (the default of makeClientConfiguration()) "
            + "and set trustRoots for a private CA.")
    static let hostnameVerificationDisabled = PinnedHTTPClientError(.hostnameVerificationDisabled,
        "The TLSConfiguration does not check the host name (certificateVerification is not .fullVerification). "
            + "The pinned HTTPClient decides from the leaf certificate and relies on that check: use .fullVerification.")
    static let unencryptedConnection = PinnedHTTPClientError(.unencryptedConnection,
        "The pinned HTTPClient found no swift-nio-ssl handler on a connection: either the URL is http:// (there is no "
            + "certificate to pin, so it is refused rather than used unpinned: use https, or another HTTPClient for plain-HTTP "
            + "endpoints), or the client runs on an event loop group whose TLS is not swift-nio-ssl's (NIOTransportServices, "
            + "macOS's default): create the HTTPClient on the group the configuration was pinned for (HTTPClient(pinnedBy:)).")
    static let noPeerCertificate = PinnedHTTPClientError(.noPeerCertificate,
        "The TLS connection reported no server certificate, so nothing could be pinned; the connection was closed.")

    static func unsupportedEventLoopGroup(_ group: any EventLoopGroup) -> PinnedHTTPClientError {
        PinnedHTTPClientError(.unsupportedEventLoopGroup,
            "AsyncHTTPClient does not run TLS through swift-nio-ssl on \(type(of: group)) (on macOS, HTTPClient's default "
                + "group and .singleton are NIOTransportServices: TLS in Network.framework), so the pin check would see no "
                + "certificate and refuse every request. Pin for MultiThreadedEventLoopGroup.singleton (eventLoopGroup: here) "
                + "and give the client the same group, or use HTTPClient(pinnedBy:), which does both.")
    }

    static let certificateTransparencyNeedsChain = PinnedHTTPClientError(.certificateTransparencyNeedsChain,
        "The store requires Certificate Transparency (Configuration.certificateTransparency is not .off, or a "
            + "TransportSecurityException has requiresCertificateTransparency), and AsyncHTTPClient exposes only the server's "
            + "leaf certificate: the SCTs are signed over the issuer's key, so they cannot be checked here and would be refused "
            + "on every connection. Call those hosts through PinStoreNIO (URLSession(configuration: .pinned(by:)) or "
            + "PinningTLSVerifier), or use a store whose CT comes per host from the signed list for hosts this client never calls.")

    static let crlNeedsChain = PinnedHTTPClientError(.crlNeedsChain,
        "The store checks CRLs for every host (Configuration.crlMode is not .off), and AsyncHTTPClient exposes only the "
            + "server's leaf certificate: a CRL is verified with the issuer's key, so it cannot be checked here and every "
            + "connection would be refused. Call those hosts through PinStoreNIO (URLSession(configuration: .pinned(by:)) or "
            + "PinningTLSVerifier), or name the hosts that need CRLs in the signed list's crl section.")

    static func invalidTrustRoots(_ error: any Error) -> PinnedHTTPClientError {
        PinnedHTTPClientError(.invalidTrustRoots,
            "swift-nio-ssl did not accept an anchor of the given TrustRoots (\(error)); check the certificates passed to TrustRoots.anchors.")
    }

    /// The code and the reason.
    public var description: String { "\(code.name): \(reason)" }
    /// Equal when the codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
