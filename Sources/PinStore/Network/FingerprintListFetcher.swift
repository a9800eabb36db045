import Foundation

/// Downloads the fingerprint list. ``URLSessionListFetcher`` is the default; plug in another
/// transport by conforming to this protocol.
///
/// A store given one (``PinStore/init(configuration:fetcher:logger:)``) uses it for the list and
/// the key documents only. CRL downloads never go through it: the store's CRL check always uses
/// its own ``URLSessionListFetcher`` (unpinned, ephemeral), so a proxy this fetcher goes through
/// is not used for CRL distribution points (<doc:Revocation>). Pin-failure reports have their
/// own session too.
///
/// A fetcher must honour ``FingerprintListRequest/maximumBodySize`` (stop reading and throw
/// ``PinStoreError/Code/invalidListData`` past it), ``FingerprintListRequest/timeout`` (the
/// whole download, throwing ``PinStoreError/Code/deadlineExceeded``), and never follow a
/// redirect to plain http. Transport failures throw ``PinStoreError/Code/network``. The store
/// keeps a backstop of its own: a fetch still running at twice the timeout (at least 5 seconds
/// past it) is cancelled and abandoned, and the update fails with
/// ``PinStoreError/Code/deadlineExceeded``. It returns non-2xx responses as they are; the store
/// decides what they mean. Its messages name ``FingerprintListRequest/document``; the store
/// reports a refused body with the code of the document it asked for
/// (``PinStoreError/Code/invalidKeyDocument`` for the key documents).
public protocol FingerprintListFetcher: Sendable {
    /// Performs one GET request.
    func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse
}

/// One list download.
public struct FingerprintListRequest: Sendable {
    /// The list URL.
    public var url: URL
    /// Extra request headers (the challenge header in challenge mode).
    public var headers: [String: String]
    /// Seconds before the whole request is abandoned: a total deadline, from the start of the
    /// fetch to the last byte of the body, however the server paces what it sends.
    public var timeout: TimeInterval
    /// Bytes past which the body is not read on and the update is refused.
    public var maximumBodySize: Int
    /// Whether a plain-http URL on a loopback host is acceptable (development and tests).
    public var allowsLoopbackHTTP: Bool
    /// What is downloaded, as the fetcher's messages name it: `"list"` or `"key documents"`.
    /// The same fetcher downloads both, and an operator reading "the server announced a
    /// 300000-byte list" about the key documents looks in the wrong place.
    public var document: String
    /// Whether plain http to any host is fetched (CRLs: signed by their CA, and served over
    /// http by design, since fetching them over https would need a revocation check of its own).
    /// Never for a list.
    package var allowsPlainHTTP = false
    /// Whether a redirect must stay on the scheme, host and port of ``url`` (CRLs, whose URL
    /// whoever issued the certificate chose: `DownloadRedirectRule`).
    package var redirectsStayOnOrigin = false

    /// Whether `url` may be fetched (the request's URL, or a redirect's target).
    func accepts(_ url: URL) -> Bool {
        if allowsPlainHTTP, url.scheme?.lowercased() == "http", url.host != nil { return true }
        return url.isAcceptableListURL(allowingLoopbackHTTP: allowsLoopbackHTTP)
    }

    /// The error of a download whose ``timeout`` passed.
    func deadlineExceeded() -> PinStoreError {
        PinStoreError(.deadlineExceeded, "The \(document) download from \(url.absoluteString) did not finish within its \(Self.seconds(timeout)) deadline (requestTimeout); it was cancelled and its connection closed. Is the server slow or sending its answer a little at a time?")
    }

    /// `timeout` for people, never trapping (a NaN or an infinite timeout has no `Int`).
    static func seconds(_ timeout: TimeInterval) -> String {
        guard timeout.isFinite else { return "\(timeout) s" }
        return timeout == timeout.rounded() && abs(timeout) < 1e15 ? "\(Int64(timeout)) s" : "\(timeout) s"
    }

    /// Creates a request.
    public init(url: URL, headers: [String: String] = [:], timeout: TimeInterval = 20, maximumBodySize: Int = 1 << 20,
                allowsLoopbackHTTP: Bool = false, document: String = "list") {
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.maximumBodySize = maximumBodySize
        self.allowsLoopbackHTTP = allowsLoopbackHTTP
        self.document = document
    }
}

/// What the server answered.
public struct FingerprintListResponse: Sendable {
    /// The HTTP status code.
    public var statusCode: Int
    /// Response headers with lowercased names.
    public var headers: [String: String]
    /// The body bytes.
    public var body: Data

    /// Creates a response; header names are lowercased.
    public init(statusCode: Int, headers: [String: String], body: Data) {
        self.statusCode = statusCode
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }
}

extension URL {
    /// Whether the host is a loopback name or address (localhost, 127.0.0.0/8, ::1).
    var hasLoopbackHost: Bool {
        guard let host = host.flatMap({ try? HostName($0) })?.text else { return false }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Whether this is a plain-http URL on a loopback host: the only configured URL under
    /// which a list fetch may use (and follow redirects to) plain http. A production https URL
    /// never may, so its server cannot redirect the fetch to `http://127.0.0.1/...`.
    var isLoopbackHTTP: Bool {
        scheme?.lowercased() == "http" && hasLoopbackHost
    }

    /// A `file:` URL naming an absolute path: where a fleet's own channel delivers the list
    /// (``FileListFetcher``).
    var isAbsoluteFileURL: Bool {
        isFileURL && path.hasPrefix("/")
    }

    /// https anywhere, or http on a loopback host when that is allowed.
    func isAcceptableListURL(allowingLoopbackHTTP: Bool) -> Bool {
        switch scheme?.lowercased() {
        case "https": return host != nil
        case "http": return allowingLoopbackHTTP && hasLoopbackHost
        default: return false
        }
    }
}

extension FingerprintListFetcher {
    /// ``fetch(_:)``, ended by the library whatever the fetcher does: every download of a store
    /// (the list, the key documents, CRLs) goes through this, so a fetcher that ignores the
    /// request's ``FingerprintListRequest/timeout`` cannot hold an update or a CRL open. The
    /// fetcher keeps the timeout itself (``URLSessionListFetcher`` does, decided off the
    /// cooperative pool); this backstop abandons the fetch at ``backstop(for:)``, later than the
    /// timeout, because a fetch that ended in time reaches it only once its task gets a turn on
    /// the pool, and a crowded pool must not turn that into a deadline error.
    func fetchWithinDeadline(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        try await TotalDeadline.run(seconds: Self.backstop(for: request.timeout), { () async throws(PinStoreError) -> FingerprintListResponse in
            try await self.fetch(request)
        }, expired: { request.deadlineExceeded() })
    }

    /// Twice `timeout`, at least 5 seconds past it.
    static func backstop(for timeout: TimeInterval) -> TimeInterval {
        let limit = TotalDeadline.clamped(timeout)
        return limit + max(limit, 5)
    }
}
