#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking

/// How a redirect turns one request into the next: a pure function, unit-tested without a
/// network. Whether the next hop may be sent at all is decided elsewhere: the https check and
/// the pin check for its own host, and the delegate's `willPerformHTTPRedirection`.
enum RedirectPolicy {
    /// The request for the next hop, as browsers and Foundation do it: 303 (and 301/302 after
    /// a POST) become a GET without body; 307/308 repeat method and body. To another origin
    /// only content-negotiation headers travel: credentials, cookies and any custom header
    /// (an `X-API-Key`, say) stay with the origin they were meant for.
    static func nextRequest(after request: URLRequest, from: URL, to next: URL, status: Int) -> URLRequest {
        var redirected = request
        redirected.url = next
        let method = request.httpMethod ?? "GET"
        if status == 303 && method != "HEAD" || (status == 301 || status == 302) && method == "POST" {
            redirected.httpMethod = "GET"
            redirected.httpBody = nil
            redirected.httpBodyStream = nil
            redirected.setValue(nil, forHTTPHeaderField: "Content-Type")
            redirected.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        redirected.setValue(nil, forHTTPHeaderField: "Host")
        let sameOrigin = from.scheme?.lowercased() == next.scheme?.lowercased()
            && from.host?.lowercased() == next.host?.lowercased() && from.port == next.port
        if !sameOrigin {
            for name in (redirected.allHTTPHeaderFields ?? [:]).keys where !crossOriginHeaders.contains(name.lowercased()) {
                redirected.setValue(nil, forHTTPHeaderField: name)
            }
        }
        return redirected
    }

    /// Headers that may follow a redirect to another origin.
    static let crossOriginHeaders: Set<String> = [
        "accept", "accept-language", "accept-encoding", "user-agent", "content-type", "content-length", "content-language",
    ]
}
#endif
