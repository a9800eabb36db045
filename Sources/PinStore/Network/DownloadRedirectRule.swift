import Foundation

/// Whether a download follows a redirect: a function of the request and the target alone.
///
/// - A list or key-document download follows a redirect to any URL it could have been
///   configured with (https; loopback http only when the configured URL is loopback http).
/// - A CRL download follows a redirect only within the origin of the distribution point: the
///   same scheme, host and port (RFC 6454, the scheme's default port filled in), any path.
///   Whoever issued a validated certificate (a partner's private CA is enough) chooses its
///   distribution points, and CRLs travel over plain http, where anyone on the path can answer
///   a redirect of their own: a redirect to anywhere would let either aim the client's request
///   at any host and port it can reach (an internal service, a cloud metadata address). A
///   redirect within the origin reaches only what the certificate named already, and keeps a
///   CA's move of a CRL file within its server working. Refusing all redirects was the other
///   choice; it buys nothing more, since the distribution point itself can name any path.
/// - Every download follows at most ``maximumRedirects``: one redirect a request is the
///   deployed servers' need, and each one is another request the server can make the client
///   send.
enum DownloadRedirectRule {
    /// Redirects one download follows at most.
    static let maximumRedirects = 5

    /// Why the redirect to `target` is refused (nil: it is followed), `followed` being the
    /// redirects this download followed before it.
    static func refusal(of target: URL?, for request: FingerprintListRequest, followed: Int) -> String? {
        guard let target else {
            return "The \(request.document) server redirected to an unreadable URL; the redirect is not followed."
        }
        guard followed < maximumRedirects else {
            return "The \(request.document) server redirected more than \(maximumRedirects) times (last to \(target.absoluteString)); no further redirect is followed."
        }
        if request.redirectsStayOnOrigin {
            guard let from = request.url.downloadOrigin, let to = target.downloadOrigin, from == to else {
                return "The \(request.document) server at \(request.url.absoluteString) redirected to \(target.absoluteString); a \(request.document) download follows redirects only to the same scheme, host and port."
            }
        }
        guard request.accepts(target) else {
            return "The \(request.document) server redirected to \(target.absoluteString); only https redirects are followed."
        }
        return nil
    }
}

extension URL {
    /// The scheme, host and port of the URL (lowercased scheme and host, the scheme's default
    /// port when none is written): what a redirect within the same origin keeps. Nil for a URL
    /// without a host, or with a scheme other than http and https.
    var downloadOrigin: DownloadOrigin? {
        guard let scheme = scheme?.lowercased(), let host = host?.lowercased(), !host.isEmpty else { return nil }
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        return DownloadOrigin(scheme: scheme, host: host, port: port ?? defaultPort)
    }
}

/// An origin (RFC 6454): scheme, host and port.
struct DownloadOrigin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int
}
