#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PinStore

/// Carries URLSession requests over ``PinnedHTTPExchange``: https only, every redirect hop
/// through the same pinned connection setup, failures as `URLError`s.
final class PinnedHTTPSTransport: Sendable {
    /// Redirect hops followed before failing with `URLError(.httpTooManyRedirects)` (Foundation's limit).
    static let maximumRedirects = 16

    let verifier: PinningTLSVerifier
    let context: Result<NIOSSLContext, PinnedHTTPExchange.Failure>
    let group: any EventLoopGroup
    /// The session configuration's `timeoutIntervalForRequest`, captured when it was made.
    let requestTimeout: TimeInterval

    init(verifier: PinningTLSVerifier, requestTimeout: TimeInterval, group: any EventLoopGroup) {
        self.verifier = verifier
        self.requestTimeout = requestTimeout
        self.group = group
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = ["http/1.1"]
        do {
            context = .success(try NIOSSLContext(configuration: configuration))
        } catch {
            context = .failure(.setup("The TLS context could not be created: \(error)"))
        }
    }

    /// Loads `request`, following redirects; the response carries the final URL.
    func load(_ request: URLRequest, isUploadTask: Bool) async throws -> (HTTPURLResponse, Data) {
        var current = request
        if isUploadTask, current.httpBody == nil, current.httpBodyStream == nil {
            // corelibs keeps an upload task's body where no URLProtocol can read it.
            throw Self.urlError(.unsupportedURL, current.url,
                                "A pinned session on Linux cannot see the body of uploadTask(with:from:); put the body in URLRequest.httpBody and use a data task.")
        }
        var hops = 0
        while true {
            let (url, response) = try await exchange(current)
            let status = Int(response.head.status.code)
            if [301, 302, 303, 307, 308].contains(status),
               let location = response.head.headers.first(name: "location"),
               let next = URL(string: location, relativeTo: url)?.absoluteURL {
                hops += 1
                guard hops <= Self.maximumRedirects else {
                    throw Self.urlError(.httpTooManyRedirects, url, "More than \(Self.maximumRedirects) redirects.")
                }
                current = Self.redirected(current, from: url, to: next, status: status)
                continue
            }
            var fields: [String: String] = [:]
            for (name, value) in response.head.headers {
                if let existing = fields[name] { fields[name] = existing + ", " + value } else { fields[name] = value }
            }
            guard let httpResponse = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields) else {
                throw Self.urlError(.badServerResponse, url, "The response could not be represented.")
            }
            return (httpResponse, response.body)
        }
    }

    /// One hop: refuse what is not https, then run the exchange.
    private func exchange(_ request: URLRequest) async throws -> (URL, PinnedHTTPExchange.Response) {
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty else {
            throw Self.urlError(.badURL, request.url, "The URL has no host.")
        }
        guard scheme == "https" else {
            // Plain http would bypass pinning altogether: a pinned session refuses it.
            throw Self.urlError(.appTransportSecurityRequiresSecureConnection, url,
                                "A pinned session carries https only; \(url.absoluteString) is \(scheme). Use https, or an unpinned session for this URL.")
        }
        let context: NIOSSLContext
        switch self.context {
        case .success(let made): context = made
        case .failure(let failure): throw Self.urlError(for: failure, url: url)
        }
        let port = components.port ?? 443
        var headers = HTTPHeaders()
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            headers.add(name: name, value: value)
        }
        if !headers.contains(name: "host") {
            headers.add(name: "Host", value: port == 443 ? host : "\(host):\(port)")
        }
        let body = try Self.body(of: request)
        let method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        if let body {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        } else if [.POST, .PUT, .PATCH].contains(method) {
            headers.replaceOrAdd(name: "Content-Length", value: "0")
        }
        headers.replaceOrAdd(name: "Connection", value: "close")
        var uri = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { uri += "?" + query }
        let timeout = min(request.timeoutInterval > 0 ? request.timeoutInterval : requestTimeout, requestTimeout)
        let exchangeRequest = PinnedHTTPExchange.Request(
            host: host, port: port,
            head: HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers),
            body: body, timeout: .nanoseconds(Int64(max(timeout, 0.001) * 1_000_000_000)))

        let verifier = self.verifier
        let group = self.group
        let running = Locked<PinnedHTTPExchange?>(nil)
        let result: Result<PinnedHTTPExchange.Response, PinnedHTTPExchange.Failure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let exchange = PinnedHTTPExchange.run(exchangeRequest, verifier: verifier, context: context, group: group) { result in
                    continuation.resume(returning: result)
                }
                running.withLock { $0 = exchange }
                if Task.isCancelled { exchange.cancel() }
            }
        } onCancel: {
            running.withLock { $0 }?.cancel()
        }
        switch result {
        case .success(let response): return (url, response)
        case .failure(let failure): throw Self.urlError(for: failure, url: url)
        }
    }

    private static func body(of request: URLRequest) throws -> Data? {
        if let data = request.httpBody { return data }
        guard let stream = request.httpBodyStream else { return nil }
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 {
                throw urlError(.requestBodyStreamExhausted, request.url, "The request body stream failed: \(stream.streamError.map { "\($0)" } ?? "unknown error").")
            }
            if count == 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }

    /// The request for the next hop, as browsers and Foundation do it: 303 (and 301/302 after
    /// a POST) become a GET without body; 307/308 repeat method and body. To another origin
    /// only content-negotiation headers travel: credentials, cookies and any custom header
    /// (an `X-API-Key`, say) stay with the origin they were meant for.
    static func redirected(_ request: URLRequest, from: URL, to next: URL, status: Int) -> URLRequest {
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

    static func urlError(for failure: PinnedHTTPExchange.Failure, url: URL) -> URLError {
        switch failure {
        case .pinning(let pinning):
            return urlError(.serverCertificateUntrusted, url,
                            "The certificate of \(pinning.host) was refused, so no request was sent: \(pinning)", underlying: pinning)
        case .timedOut:
            return urlError(.timedOut, url, "The request timed out.")
        case .cancelled:
            return urlError(.cancelled, url, "The request was cancelled.")
        case .cannotConnect(let detail):
            return urlError(.cannotConnectToHost, url, "Could not connect to the server: \(detail)")
        case .tls(let detail):
            return urlError(.secureConnectionFailed, url, "The TLS handshake failed: \(detail)")
        case .connectionLost(let detail):
            return urlError(.networkConnectionLost, url, detail)
        case .setup(let detail):
            return urlError(.unknown, url, detail)
        }
    }

    static func urlError(_ code: URLError.Code, _ url: URL?, _ description: String, underlying: (any Error)? = nil) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
        }
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return URLError(code, userInfo: info)
    }
}
#endif
