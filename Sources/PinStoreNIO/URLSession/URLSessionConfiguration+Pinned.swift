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
    /// `NSUnderlyingErrorKey` is the ``PinningFailure`` naming the reason.
    ///
    /// What the pinned transport does, and does not do:
    /// - https only: an `http:` request (or a redirect to one) fails with
    ///   `URLError(.appTransportSecurityRequiresSecureConnection)`; plain http would skip pinning.
    ///   FoundationNetworking's built-in transports are removed from the configuration, so web
    ///   socket (`ws:`/`wss:`), `ftp:` and `data:` tasks fail instead of running unpinned.
    /// - Redirects are followed inside the transport (corelibs cannot re-issue them through a
    ///   protocol), up to 16 hops, each hop on a new connection checked for its own host; the
    ///   delegate's `willPerformHTTPRedirection` is not consulted.
    /// - One connection per request (`Connection: close`), on the shared
    ///   `MultiThreadedEventLoopGroup.singleton`; no connection is reused.
    /// - Timeouts: the smaller of `timeoutIntervalForRequest` (as configured now) and the
    ///   request's `timeoutInterval`, for connecting and for each silence on the connection.
    /// - Responses are delivered whole (status, headers, body) when complete; no caching,
    ///   cookie storage or content decoding (no `Accept-Encoding` is sent unless you set one).
    /// - Making a pinned configuration again for the same store, trust roots, `updateOnEmpty`
    ///   and request timeout reuses the first one's transport (and logger): make sessions freely.
    /// - The body of `uploadTask(with:from:)` is invisible to protocols on Linux: send bodies
    ///   with `URLRequest.httpBody` (or `httpBodyStream`) on data tasks.
    ///
    /// - Parameters:
    ///   - store: The pins.
    ///   - trustRoots: The anchors of the normal trust evaluation; the system store by default.
    ///   - updateOnEmpty: Whether a host without pins triggers one blocking forced update first
    ///     (at most one download a minute on behalf of such hosts; a download under way is shared).
    ///   - base: The configuration to start from (copied); `.default` if omitted.
    ///   - logger: Where refused connections are logged; none by default.
    public static func pinned(by store: PinStore, trustRoots: TrustRoots = .system, updateOnEmpty: Bool = false,
                              basedOn base: URLSessionConfiguration? = nil, logger: Logger? = nil) -> URLSessionConfiguration {
        let configuration = (base?.copy() as? URLSessionConfiguration) ?? base ?? .default
        let key = PinnedSessionRegistry.Key(
            store: ObjectIdentifier(store),
            anchors: trustRoots.anchors.map(\.derRepresentation),
            includesSystemStore: trustRoots.includesSystemStore,
            updateOnEmpty: updateOnEmpty,
            requestTimeout: configuration.timeoutIntervalForRequest,
            maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost)
        let slot = PinnedSessionRegistry.slot(for: key) {
            PinnedHTTPSTransport(
                verifier: PinningTLSVerifier(store: store, trustRoots: trustRoots, updateOnEmpty: updateOnEmpty, logger: logger),
                settings: PinnedHTTPSTransport.SessionSettings(configuration),
                maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
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
        return configuration
    }
}
#endif
