import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

@available(macOS 15.0, *)
extension HTTP2ClientTransport.Posix {
    /// A gRPC client transport whose every connection is pinned through `store`.
    ///
    /// ```swift
    /// let transport = try HTTP2ClientTransport.Posix(pinnedBy: store, target: .dns(host: "api.example.com", port: 443))
    /// try await withGRPCClient(transport: transport) { client in
    ///     // generated stubs or client.unary(...) as usual
    /// }
    /// ```
    ///
    /// Each connection's TLS handshake runs the same chain-aware decision as PinStoreNIO's
    /// `PinningTLSVerifier` (it is that verifier): the chain, its dates and the host name are
    /// validated against `trustRoots` (default validation is never turned off; the pin check only
    /// adds to it), then deny pins, leaf and CA pins and Certificate Transparency, with Apple
    /// ATS's transport minimums (TLS 1.2, forward-secret suites, strong keys and signatures). A
    /// refused server fails the handshake before any gRPC byte is sent; the RPCs waiting for the
    /// connection fail with `RPCError` `.unavailable` whose message says "refused by PinStore
    /// (the client ended the connection; the server did not close it): " and the failure's
    /// summary, after gRPC's own words, and whose `cause` is the `PinStore/PinningFailure`
    /// (`PinningFailure(unwrapping:)` finds it).
    ///
    /// After a refusal gRPC tries again on its connection backoff, `config.backoff` (1 s growing
    /// to 120 s by default): a server the next list pins is reached at the next attempt, up to
    /// two minutes later unless the backoff is capped.
    ///
    /// When a list update withdraws the pin of an open connection's chain, the connection is
    /// closed before the update returns, and no further RPC byte is written on it; gRPC then
    /// reconnects, and the new handshake is decided by the new list.
    ///
    /// **The host name judged.** swift-nio-ssl's verification callback is not told which name a
    /// connection was opened for, so the host is fixed when the transport is made: `serverHostname`
    /// when given; else the host of `config.http2.authority` (the name gRPC then sends in SNI
    /// and `:authority`); else the target's host (`.dns(host:port:)`'s name, or the single
    /// address of `.ipv4(address:port:)` / `.ipv6(address:port:)`). Every connection, to whatever address
    /// the target resolves to, must present a chain valid and pinned for that host, and the
    /// handshake sends it in SNI (no SNI for an IP address). A target that names no single host
    /// (a Unix domain socket, a virtual socket, several addresses, a custom target) needs
    /// `serverHostname`, and is refused without it. A `serverHostname` also becomes the RPCs'
    /// `:authority` unless `config.http2.authority` is set (it must then name the same host).
    ///
    /// **Network.framework.** `HTTP2ClientTransport.TransportServices` (and any
    /// NIOTransportServices event loop group) does TLS in Network.framework, where no pin check
    /// can run: there is no pinned form of it, and such a group passed here is refused. This
    /// transport runs on NIOPosix on every platform, macOS included.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - target: The server to connect to, as for `HTTP2ClientTransport.Posix`.
    ///   - serverHostname: The host the server's certificate must be valid and pinned for, when
    ///     it is not the target's (an address connected to for a named host, a Unix socket).
    ///   - trustRoots: The anchors of the normal trust evaluation; the system store unless given.
    ///   - tlsConfiguration: Other TLS settings (a client certificate and key for mutual TLS);
    ///     its trust roots are not used (`trustRoots` are), and its `certificateVerification`
    ///     must not be `.none`. gRPC's ALPN protocols are added when it sets none.
    ///   - config: gRPC's transport configuration. A `channelDebuggingCallbacks.onCreateTCPConnection`
    ///     already set runs after the pinned TLS handler is in place.
    ///   - resolverRegistry: As for `HTTP2ClientTransport.Posix`.
    ///   - serviceConfig: As for `HTTP2ClientTransport.Posix`.
    ///   - eventLoopGroup: A NIOPosix group (`MultiThreadedEventLoopGroup` or one of its loops).
    ///   - updateOnEmpty: Whether a connection to a host without pins first waits for one
    ///     rate-limited list update.
    ///   - updateOnMismatch: The same after a pin mismatch, so an unannounced certificate
    ///     rotation is picked up at the first connection to the new certificate.
    ///   - logger: Where refusals are logged (at debug).
    /// - Throws: ``PinnedGRPCError`` when no host name can be known, the event loop group is not
    ///   NIOPosix's, or the TLS configuration would void or cannot meet the pin check's
    ///   requirements; gRPC's `RuntimeError` when no resolver in `resolverRegistry` takes `target`.
    public init(pinnedBy store: PinStore,
                target: any ResolvableTarget,
                serverHostname: String? = nil,
                trustRoots: TrustRoots = .system,
                tlsConfiguration: TLSConfiguration = .makeClientConfiguration(),
                config: Config = .defaults,
                resolverRegistry: NameResolverRegistry = .defaults,
                serviceConfig: ServiceConfig = ServiceConfig(),
                eventLoopGroup: any EventLoopGroup = .singletonMultiThreadedEventLoopGroup,
                updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                logger: Logger? = nil) throws {
        let connections = try PinnedGRPCConnections.make(
            store: store, target: target, serverHostname: serverHostname, authority: config.http2.authority,
            trustRoots: trustRoots, tlsConfiguration: tlsConfiguration, eventLoopGroup: eventLoopGroup,
            updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, logger: logger)
        var config = config
        if serverHostname != nil, config.http2.authority == nil {
            // The name the certificate is judged for is also the one the RPCs are addressed to.
            let host = connections.serverName.host
            config.http2.authority = host.contains(":") ? "[\(host)]" : host
        }
        config.channelDebuggingCallbacks.onCreateTCPConnection = connections.initializer(then: config.channelDebuggingCallbacks.onCreateTCPConnection)
        // TLS comes from the initializer above; gRPC itself adds none and marks the connection
        // secure (https scheme).
        try self.init(target: target, transportSecurity: .customSecure, config: config, resolverRegistry: resolverRegistry,
                      serviceConfig: serviceConfig, eventLoopGroup: eventLoopGroup)
    }
}

@available(macOS 15.0, *)
extension PinnedGRPCConnections {
    /// Checks everything that can be checked before a connection exists, and makes the pin check.
    static func make(store: PinStore, target: any ResolvableTarget, serverHostname: String?, authority: String?,
                     trustRoots: TrustRoots, tlsConfiguration: TLSConfiguration, eventLoopGroup: any EventLoopGroup,
                     updateOnEmpty: Bool, updateOnMismatch: Bool, logger: Logger?) throws(PinnedGRPCError) -> PinnedGRPCConnections {
        let serverName = try PinnedGRPCServerName(target: target, serverHostname: serverHostname, authority: authority)
        // NIOPosix's ClientBootstrap runs only on NIOPosix loops; on NIOTransportServices' ones
        // TLS would be Network.framework's.
        guard ClientBootstrap(validatingGroup: eventLoopGroup.any()) != nil else {
            throw .transportServicesCannotBePinned(eventLoopGroup)
        }
        if case .none = tlsConfiguration.certificateVerification {
            throw .certificateVerificationDisabled
        }
        let logger = logger ?? Logger(label: "PinStoreGRPC", factory: { _ in SwiftLogNoOpLogHandler() })
        let verifier = PinningTLSVerifier(store: store, trustRoots: trustRoots, updateOnEmpty: updateOnEmpty,
                                          updateOnMismatch: updateOnMismatch, logger: logger)
        var tls = tlsConfiguration
        if tls.applicationProtocols.isEmpty { tls.applicationProtocols = ["grpc-exp", "h2"] }
        // The host's transport minimums, so a configuration that cannot meet them fails here and
        // not at each connection (the verifier derives the same context per connection).
        do {
            tls = try verifier.clientConfiguration(for: serverName.host, base: tls)
        } catch {
            throw PinnedGRPCError(.transportMinimumUnreachable, (error as? PinningTLSSetupError)?.reason ?? "\(error)")
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw PinnedGRPCError(.invalidTLSConfiguration, "swift-nio-ssl did not accept the TLS configuration: \(error)")
        }
        return PinnedGRPCConnections(verifier: verifier, serverName: serverName, context: context, logger: logger)
    }
}
