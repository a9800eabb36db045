/// A gRPC transport configuration that pinning cannot allow.
///
/// Pin refusals themselves fail RPCs with an `RPCError` whose message says "refused by
/// PinStore" and why, and whose cause is the `PinStore/PinningFailure`; this error is for what would make the pin check
/// meaningless or impossible, found when the transport is made.
///
/// ```swift
/// do {
///     transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: .unixDomainSocket(path: path))
/// } catch let error as PinnedGRPCError where error.code == .noHostName {
///     // say which host the server's certificate is for: serverHostname: "api.internal"
/// }
/// ```
public struct PinnedGRPCError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: compare with the static members. A struct, not an enum, so that a new
    /// problem is not a source break for code that switches over the known ones.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// A stable name for the problem.
        public let rawValue: String
        /// The code named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The name.
        public var description: String { rawValue }

        /// No host name can be known for the connections: the target is a Unix domain socket,
        /// a virtual socket, several addresses or a custom target, and no `serverHostname` (nor
        /// `config.http2.authority`) names the host the server's certificate must be valid for.
        public static let noHostName = Code(rawValue: "noHostName")
        /// `serverHostname` (or the authority) can never be a host name.
        public static let invalidHostName = Code(rawValue: "invalidHostName")
        /// `serverHostname` and `config.http2.authority` name different hosts: the certificate
        /// would be judged for one while gRPC asks the server for the other.
        public static let conflictingHostNames = Code(rawValue: "conflictingHostNames")
        /// The event loop group is not NIOPosix's: on Apple platforms, NIOTransportServices'
        /// groups (and `HTTP2ClientTransport.TransportServices`) do TLS in Network.framework,
        /// where no pin check can run.
        public static let transportServicesCannotBePinned = Code(rawValue: "transportServicesCannotBePinned")
        /// The TLS configuration has `certificateVerification` `.none`: swift-nio-ssl would
        /// ignore the pin check's verdict.
        public static let certificateVerificationDisabled = Code(rawValue: "certificateVerificationDisabled")
        /// The TLS configuration cannot meet the host's ATS transport minimums.
        public static let transportMinimumUnreachable = Code(rawValue: "transportMinimumUnreachable")
        /// swift-nio-ssl refused the TLS configuration (a client certificate or key it cannot read).
        public static let invalidTLSConfiguration = Code(rawValue: "invalidTLSConfiguration")
    }

    /// What went wrong.
    public let code: Code
    /// What it means and what to do.
    public let reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    static let noHostName = PinnedGRPCError(.noHostName,
        "The gRPC target names no single host (a Unix domain socket, a virtual socket, several addresses or a custom target), "
            + "so no host name could be judged against the server's certificate and its pins. Pass serverHostname: with the "
            + "name the server's certificate is issued for (the host the pins are listed under).")

    static func invalidHostName(_ name: String) -> PinnedGRPCError {
        PinnedGRPCError(.invalidHostName,
            "\"\(name)\" can never be a host name (a port, a scheme, a path or an empty label?); give the bare host the server's certificate is issued for.")
    }

    static func conflictingHostNames(serverHostname: String, authority: String) -> PinnedGRPCError {
        PinnedGRPCError(.conflictingHostNames,
            "serverHostname \"\(serverHostname)\" and config.http2.authority \"\(authority)\" name different hosts: the certificate "
                + "would be judged for one while the server is asked for the other. Set only one of them, or the same host in both.")
    }

    static func transportServicesCannotBePinned(_ group: any Sendable) -> PinnedGRPCError {
        PinnedGRPCError(.transportServicesCannotBePinned,
            "\(type(of: group)) is not a NIOPosix event loop group: on Apple platforms NIOTransportServices (and "
                + "HTTP2ClientTransport.TransportServices) do TLS in Network.framework, where no pin check can run. Use the "
                + "pinned HTTP2ClientTransport.Posix on MultiThreadedEventLoopGroup.singleton (the default).")
    }

    static let certificateVerificationDisabled = PinnedGRPCError(.certificateVerificationDisabled,
        "The TLSConfiguration has certificateVerification .none, under which swift-nio-ssl ignores a failed verification: "
            + "pinning would silently do nothing. Use .fullVerification (the default of makeClientConfiguration()).")

    /// The code and the reason.
    public var description: String { "\(code.rawValue): \(reason)" }
    /// Equal when the codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
