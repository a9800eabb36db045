import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PinStore
import PinStoreNIO

extension HTTPClient.Configuration {
    /// A configuration whose every connection is pinned through `store`.
    ///
    /// ```swift
    /// let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: try .pinned(by: store))
    /// defer { try? await client.shutdown() }
    /// let response = try await client.execute(HTTPClientRequest(url: "https://api.example.com/v1/items"), timeout: .seconds(30))
    /// ```
    ///
    /// See ``pin(with:eventLoopGroup:trustRoots:updateOnEmpty:updateOnMismatch:logger:)`` for what is
    /// checked and when. On macOS, AsyncHTTPClient's default group runs TLS in Network.framework,
    /// where nothing can be pinned, so there the call above throws
    /// ``PinnedHTTPClientError/Code/unsupportedEventLoopGroup``: use
    /// ``AsyncHTTPClient/HTTPClient/init(pinnedBy:eventLoopGroup:configuration:trustRoots:updateOnEmpty:updateOnMismatch:logger:)``,
    /// which runs on `MultiThreadedEventLoopGroup.singleton` on every platform.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - eventLoopGroup: The group the client will run on (pass the same one to `HTTPClient`).
    ///     The default is AsyncHTTPClient's, the group of `.singleton` and `HTTPClient(configuration:)`.
    ///   - tlsConfiguration: The TLS settings; its `trustRoots` are the anchors of the default
    ///     verification (the system store unless set, for instance `.certificates([privateCA])`).
    ///   - trustRoots: The anchors as PinStore's `TrustRoots`, the value the pinned URLSession
    ///     and `PinningTLSVerifier` take; when given, they replace `tlsConfiguration`'s.
    ///   - updateOnEmpty: Whether a connection to a host without pins first waits for one
    ///     rate-limited list update (at most one a minute on behalf of refusals).
    ///   - updateOnMismatch: The same after a pin mismatch, so an unannounced certificate rotation
    ///     is picked up at the first connection to the new certificate.
    ///   - logger: Where refusals are logged (at debug).
    /// - Throws: ``PinnedHTTPClientError`` when `tlsConfiguration` does not run the full default
    ///   verification, or when AsyncHTTPClient would not run TLS on `eventLoopGroup` through
    ///   swift-nio-ssl (NIOTransportServices on macOS).
    public static func pinned(by store: PinStore, eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
                              tlsConfiguration: TLSConfiguration = .makeClientConfiguration(),
                              trustRoots: TrustRoots? = nil,
                              updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                              logger: Logger? = nil) throws(PinnedHTTPClientError) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(tlsConfiguration: tlsConfiguration)
        try configuration.pin(with: store, eventLoopGroup: eventLoopGroup, trustRoots: trustRoots, updateOnEmpty: updateOnEmpty,
                              updateOnMismatch: updateOnMismatch, logger: logger)
        return configuration
    }

    /// Pins every connection of a client made with this configuration through `store`. Call it
    /// last, after the other settings.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5)))
    /// configuration.tlsConfiguration?.trustRoots = .certificates(partnerCA)   // optional
    /// try configuration.pin(with: store)
    /// let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    /// ```
    ///
    /// The pin check needs swift-nio-ssl to do the handshake: AsyncHTTPClient does so on NIOPosix
    /// event loops (`MultiThreadedEventLoopGroup`), and on NIOTransportServices' (macOS's default,
    /// TLS in Network.framework) it does not, so the check would see no certificate and refuse
    /// every request. This throws instead, at configuration time, when `eventLoopGroup` is such
    /// a group. On macOS, pass `MultiThreadedEventLoopGroup.singleton` here and to `HTTPClient`.
    ///
    /// AsyncHTTPClient keeps its default verification (chain to `trustRoots`, dates, host name)
    /// and then runs the pin check on every new HTTP/1.1 and HTTP/2 connection, before any
    /// request is scheduled on it. It sees only the server's leaf certificate, not the host the
    /// connection is for, so the rule is stricter than the other adapters': the leaf is admitted
    /// only if the chain-aware decision allows it for every host it could have been presented
    /// for (each DNS name, every host under a wildcard name). A leaf naming the server's own IP
    /// address is refused: swift-nio-ssl accepts it for any requested host. Hosts pinned only by
    /// issuer pins are refused (`PinStore/PinningFailure/Reason/issuerPinsNeedChain`): use
    /// PinStoreNIO for those.
    ///
    /// A refused connection is closed before a request byte is written and its requests fail
    /// with the `PinStore/PinningFailure`. This sets `connectionPool.retryConnectionEstablishment`
    /// to false so they fail at once; with retries on (set it back after this call), AsyncHTTPClient
    /// reconnects with backoff and the request fails with the same error only at `timeout.connect`.
    /// Admitted connections whose pins a list update removes are closed before they carry another
    /// request. Plain `http://` connections are refused.
    ///
    /// Connection initializers already set are kept and run after the pin check. A request's own
    /// `HTTPClientRequest.tlsConfiguration` is not visible here: keep `.fullVerification` in it.
    ///
    /// ATS's transport minimums: the client's TLS configuration gets a minimum version of TLS 1.2
    /// (or the lowest a `PinStore/TransportSecurityException` allows any host, each connection's
    /// negotiated version then checked against its own host's minimum in the initializer) and
    /// forward-secret suites only, for every host: AsyncHTTPClient cannot show which suite a
    /// connection negotiated, so a forward-secrecy exception cannot be honoured per host here
    /// (use PinStoreNIO for such a host). The leaf's key size and signature digest are checked in
    /// the initializer; the certificates above the leaf are not visible to it.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - eventLoopGroup: The group the client will run on (pass the same one to `HTTPClient`).
    ///     The default is AsyncHTTPClient's, the group of `.singleton` and `HTTPClient(configuration:)`.
    ///   - trustRoots: The anchors as PinStore's `TrustRoots` (a private CA given once for every
    ///     adapter, without importing NIOSSL); when given, they replace the TLS configuration's.
    ///     Anchors must be self-signed roots here: swift-nio-ssl does not end a chain at an
    ///     intermediate.
    ///   - updateOnEmpty: Whether a connection to a host without pins first waits for one
    ///     rate-limited list update.
    ///   - updateOnMismatch: The same after a pin mismatch.
    ///   - logger: Where refusals are logged (at debug).
    /// - Throws: ``PinnedHTTPClientError`` when the TLS configuration does not run the full
    ///   default verification (`certificateVerification` other than `.fullVerification`), or
    ///   cannot meet the transport minimums, or when AsyncHTTPClient would not do TLS on
    ///   `eventLoopGroup` through swift-nio-ssl (``PinnedHTTPClientError/Code/unsupportedEventLoopGroup``),
    ///   or when the store requires Certificate Transparency for every host
    ///   (``PinnedHTTPClientError/Code/certificateTransparencyNeedsChain``), or checks CRLs for
    ///   every host (``PinnedHTTPClientError/Code/crlNeedsChain``).
    public mutating func pin(with store: PinStore, eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
                             trustRoots: TrustRoots? = nil,
                             updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                             logger: Logger? = nil) throws(PinnedHTTPClientError) {
        // CT needs the validated chain (the issuer): refused here rather than skipped. Hosts the
        // signed list puts under CT are refused (or reported) per connection by the CT rule,
        // which sees that this adapter has the leaf only.
        if store.configuration.certificateTransparency != .off
            || store.configuration.transportSecurityExceptions.contains(where: \.requiresCertificateTransparency) {
            throw .certificateTransparencyNeedsChain
        }
        // The same for CRLs; hosts the signed list's crl section names are refused (or
        // reported, under reportOnly) per connection by the CRL rule.
        if store.configuration.crlMode != .off {
            throw .crlNeedsChain
        }
        if let trustRoots {
            var tls = tlsConfiguration ?? .makeClientConfiguration()
            do {
                try tls.setTrustRoots(trustRoots)
            } catch {
                throw .invalidTrustRoots(error)
            }
            tlsConfiguration = tls
        }
        if let tls = tlsConfiguration {
            switch tls.certificateVerification {
            case .fullVerification: break
            case .none: throw .certificateVerificationDisabled
            default: throw .hostnameVerificationDisabled
            }
        }
        // AsyncHTTPClient picks its TLS per event loop: swift-nio-ssl where NIOPosix's
        // ClientBootstrap accepts the loop, Network.framework on NIOTransportServices' loops.
        guard ClientBootstrap(validatingGroup: eventLoopGroup.any()) != nil else {
            throw .unsupportedEventLoopGroup(eventLoopGroup)
        }
        // One TLS configuration serves every host: the lowest version any host may use, and
        // forward secrecy for all (the negotiated suite is invisible afterwards).
        let floor = TransportSecurityRequirements(minimumTLSVersion: store.transportSecurity.lowestMinimumTLSVersion,
                                                  requiresForwardSecrecy: true)
        do {
            tlsConfiguration = try TransportSecurityTLS.applying(floor, to: tlsConfiguration ?? .makeClientConfiguration())
        } catch {
            throw PinnedHTTPClientError(.transportMinimumUnreachable, error.reason)
        }
        let connections = PinnedConnections(store: store, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, logger: logger)
        http1_1ConnectionDebugInitializer = connections.initializer(then: http1_1ConnectionDebugInitializer)
        http2ConnectionDebugInitializer = connections.initializer(then: http2ConnectionDebugInitializer)
        connectionPool.retryConnectionEstablishment = false
    }
}

extension HTTPClient {
    /// A client whose every connection is pinned through `store`, on an event loop group where
    /// swift-nio-ssl does the TLS handshake (so the pin check sees the certificate) on every
    /// platform, macOS included.
    ///
    /// ```swift
    /// let client = try HTTPClient(pinnedBy: store)
    /// defer { try? await client.shutdown() }
    /// let response = try await client.execute(HTTPClientRequest(url: "https://api.example.com/v1/items"), timeout: .seconds(30))
    /// ```
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - eventLoopGroup: The group the client runs on; NIOPosix's shared one unless given.
    ///   - configuration: The other settings (timeouts, `tlsConfiguration`...); pinned here with
    ///     ``Configuration/pin(with:eventLoopGroup:trustRoots:updateOnEmpty:updateOnMismatch:logger:)``.
    ///   - trustRoots: The anchors as PinStore's `TrustRoots`, the value every adapter takes (for
    ///     a private CA: `try .anchors(pem: partnerCAPEM)`); the system store unless given.
    ///   - updateOnEmpty: Whether a connection to a host without pins first waits for one
    ///     rate-limited list update.
    ///   - updateOnMismatch: The same after a pin mismatch.
    ///   - logger: Where refusals are logged (at debug).
    /// - Throws: ``PinnedHTTPClientError`` as `pin(with:)` does.
    public convenience init(pinnedBy store: PinStore,
                            eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                            configuration: Configuration = Configuration(),
                            trustRoots: TrustRoots? = nil,
                            updateOnEmpty: Bool = true, updateOnMismatch: Bool = true,
                            logger: Logger? = nil) throws(PinnedHTTPClientError) {
        var configuration = configuration
        try configuration.pin(with: store, eventLoopGroup: eventLoopGroup, trustRoots: trustRoots, updateOnEmpty: updateOnEmpty,
                              updateOnMismatch: updateOnMismatch, logger: logger)
        self.init(eventLoopGroup: eventLoopGroup, configuration: configuration)
    }
}
