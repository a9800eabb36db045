#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Logging
import NIOCore
import NIOPosix
import PinStore

extension URLSessionConfiguration {
    /// A session configuration whose https requests are pinned through `store` (Linux).
    ///
    /// On Linux a URLSession delegate never sees the server's certificate, so a challenge
    /// handler cannot pin. A session made from this configuration carries its requests over
    /// SwiftNIO and swift-nio-ssl instead, where every connection's chain goes through the normal
    /// trust evaluation and the pin check before a single request byte is sent:
    ///
    /// ```swift
    /// let session = URLSession(configuration: .pinned(by: store))
    /// let (data, response) = try await session.data(from: URL(string: "https://api.example.com/v1/items")!)
    /// ```
    ///
    /// A refused server surfaces as `URLError(.serverCertificateUntrusted)` whose
    /// `NSUnderlyingErrorKey` is the `PinningFailure` naming the reason.
    ///
    /// What the pinned transport does, and does not do:
    /// - https only: an `http:` request (or a redirect to one) fails with
    ///   `URLError(.appTransportSecurityRequiresSecureConnection)`; plain http would skip pinning.
    ///   FoundationNetworking's built-in transports are removed from the configuration, so web
    ///   socket (`ws:`/`wss:`), `ftp:` and `data:` tasks fail instead of running unpinned.
    /// - Keep-alive: connections are pooled per host and port, at most
    ///   `httpMaximumConnectionsPerHost` each (requests beyond wait in order), closed after 60 s
    ///   idle. A connection serves only the host it was checked for, and when the store's list
    ///   changes, a pooled connection whose chain is no longer pinned for its host carries no
    ///   further request. An idempotent request on a connection the server had closed is retried
    ///   once on a new one; `Connection: close` and HTTP/1.0 responses end the connection.
    ///   HTTP/2 when the server offers it through ALPN: requests to a host then share one
    ///   connection as concurrent streams (no server push).
    /// - Redirects are followed inside the transport (up to 16 hops, each checked for its own
    ///   host); the delegate's `willPerformHTTPRedirection` is asked first and may stop or
    ///   change a hop.
    /// - Bodies: a delegate-based data task gets the body in pieces as it arrives, with
    ///   backpressure; completion handlers and `data(from:)` get it whole, within
    ///   `limits.bufferedBodyBudget` (256 MiB by default) for all such bodies of the
    ///   configuration's sessions together (`URLError(.dataLengthExceedsMaximum)` beyond). gzip
    ///   and deflate are decoded (`Accept-Encoding: deflate, gzip` is sent unless the request
    ///   names its own).
    /// - A misbehaving server (floods of HTTP/2 control frames, endless headers, a storm of 1xx
    ///   responses, protocol violations) fails its request at once with a `URLError` whose
    ///   `NSUnderlyingErrorKey` is the ``PinnedTransportError`` naming the cause; see
    ///   ``PinnedTransportLimits`` for the bounds.
    /// - The session's `httpAdditionalHeaders`, cookies (`httpShouldSetCookies`,
    ///   `httpCookieStorage`), `timeoutIntervalForRequest` (connecting and each silence) and
    ///   `timeoutIntervalForResource` (the whole load) apply. A `Host` header naming another
    ///   host than the URL is refused; internationalized host names go out in their ASCII
    ///   (`xn--`) form, which is also what pins are matched on.
    /// - Uploads (`upload(for:from:)`, `upload(for:fromFile:)`, upload tasks) work. Download
    ///   tasks and `download(from:)` fail at once with `URLError(.unsupportedURL)`:
    ///   FoundationNetworking lets only its own protocols hand over a downloaded file. Use
    ///   `session.pinnedDownload(from:)` (`URLSession/pinnedDownload(from:)`), which streams
    ///   the body to a temporary file and returns it as `download(from:)` would.
    /// - No caching: `urlCache` is nil and `requestCachePolicy` is
    ///   `.reloadIgnoringLocalCacheData`, whatever `base` had. A cache set on the configuration
    ///   afterwards is never answered from and never written to: every request still goes to the
    ///   server through the pin check (FoundationNetworking only looks each request up in it
    ///   first, which costs time and nothing else).
    /// - Runs on the shared `MultiThreadedEventLoopGroup.singleton`.
    /// - Making a pinned configuration again for the same store, trust roots, `updateOnEmpty`,
    ///   request timeout, connection limit and `limits` reuses the first one's transport and pool (and
    ///   logger): make sessions freely.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - trustRoots: The anchors of the normal trust evaluation; the system store by default.
    ///   - updateOnEmpty: Whether a host without pins triggers one forced update first.
    ///   - updateOnMismatch: Whether a valid chain that matches no pin triggers one forced update
    ///     first, so a partner's unannounced certificate rotation needs no restart. Downloads on
    ///     behalf of refusals (both kinds together) happen at most once a minute per store; a
    ///     download under way is shared; an impostor is refused all the same.
    ///   - base: The configuration to start from (copied); `.default` if omitted.
    ///   - logger: Where refused connections are logged; none by default.
    ///   - limits: The memory budget for buffered bodies; ``PinnedTransportLimits/init()`` by default.
    public static func pinned(by store: PinStore, trustRoots: TrustRoots = .system, updateOnEmpty: Bool = true,
                              updateOnMismatch: Bool = true, basedOn base: URLSessionConfiguration? = nil, logger: Logger? = nil,
                              limits: PinnedTransportLimits = .init()) -> URLSessionConfiguration {
        let configuration = (base?.copy() as? URLSessionConfiguration) ?? base ?? .default
        let key = PinnedSessionRegistry.Key(
            store: ObjectIdentifier(store),
            anchors: trustRoots.anchors.map(\.derRepresentation),
            includesSystemStore: trustRoots.includesSystemStore,
            updateOnEmpty: updateOnEmpty,
            updateOnMismatch: updateOnMismatch,
            requestTimeout: configuration.timeoutIntervalForRequest,
            maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
            limits: limits)
        let slot = PinnedSessionRegistry.slot(for: key) {
            PinnedHTTPSTransport(
                verifier: PinningTLSVerifier(store: store, trustRoots: trustRoots, updateOnEmpty: updateOnEmpty,
                                             updateOnMismatch: updateOnMismatch, logger: logger),
                settings: PinnedHTTPSTransport.SessionSettings(configuration),
                maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
                limits: limits,
                group: MultiThreadedEventLoopGroup.singleton)
        }
        let pinnedClass: AnyClass = PinnedSessionRegistry.protocolClass(forSlot: slot)
        // Ours first, so that no other protocol can claim http(s); and none of
        // FoundationNetworking's built-in transports at all: they would carry ws/wss (web
        // socket tasks) or ftp over libcurl with no pin check, silently. With them gone such a
        // task fails instead. The app's own protocol classes stay, after ours.
        let others = (configuration.protocolClasses ?? []).filter { candidate in
            candidate != pinnedClass && !String(reflecting: candidate).hasPrefix("FoundationNetworking.")
        }
        configuration.protocolClasses = [pinnedClass] + others
        // The protocol never answers from a cache nor stores in one (it reports every response
        // `.notAllowed`), but FoundationNetworking looks each data task up in the
        // configuration's cache before it makes the protocol: `.default`'s URLCache lists its
        // folder on disk for that, about a quarter of a kept-alive pinned request (issue 33).
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }
}
#endif
