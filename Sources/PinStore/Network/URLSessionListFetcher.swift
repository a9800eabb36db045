import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads the list with URLSession (FoundationNetworking on Linux).
///
/// Every download runs on a fresh ephemeral session of its own, so the (unpinned) list
/// connection is never shared with pinned API traffic, and no cookies or cache are kept. The
/// platform's normal TLS trust evaluation applies. The body is read with a size limit and
/// redirects are followed only to https (or loopback http when the request allows it; within
/// the distribution point's origin for CRLs), five at most.
///
/// ``FingerprintListRequest/timeout`` is a total deadline the fetcher keeps itself
/// (`TotalDeadline`): FoundationNetworking ignores `timeoutIntervalForResource`, and its idle
/// timeout lets a server that sends a byte now and then hold a download open for as long as it
/// likes. When the deadline passes the transfer is cancelled, which closes its connection, and
/// the fetch throws ``PinStoreError/Code/deadlineExceeded``. The idle timeout is the same
/// number of seconds, so it can only fire once the deadline has passed too, and it throws the same.
///
/// The body must come as it is (`Accept-Encoding: identity`); a compressed one is refused, and
/// its transfer ended, as soon as its headers arrive (pieces already inflated are dropped). FoundationNetworking's libcurl inflates whatever encoding a
/// server names, as fast as it can and with no back-pressure, so a limit counted on what the
/// delegate receives cannot bound it: one megabyte of gzip from a hostile server grew a
/// process by gigabytes before the limit's cancellation landed. Lists are at most a few hundred
/// kilobytes, so compression saves the deployed servers little.
public struct URLSessionListFetcher: FingerprintListFetcher {
    /// Creates the fetcher.
    public init() {}

    public func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
        guard request.accepts(request.url) else {
            throw PinStoreError(.network, "Refusing to fetch the \(request.document) from \(request.url.absoluteString): the URL must be https.")
        }
        // Decided where each side happens: the session's delegate queue for the transfer, the
        // deadline's own queue for the time. A transfer that ended in time is never lost to the
        // deadline while this task waits for a turn on a crowded cooperative pool.
        let result = await TotalDeadline.race(seconds: request.timeout, start: { finish in
            Self.start(request, finish: finish)
        }, expired: {
            request.deadlineExceeded()
        }, cancelled: {
            PinStoreError(.network, "The \(request.document) download was cancelled.")
        })
        return try result.get()
    }

    /// Starts one transfer on a session of its own, which reports its outcome through `finish`
    /// (from the session's delegate queue); returns how to cancel it (which ends the transfer
    /// and closes its connection).
    private static func start(_ request: FingerprintListRequest,
                              finish: @escaping @Sendable (Result<FingerprintListResponse, PinStoreError>) -> Void) -> @Sendable () -> Void {
        // Finite and positive whatever the request says: the transport converts it to an integer.
        let idleTimeout = max(TotalDeadline.clamped(request.timeout), 0.001)
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData, timeoutInterval: idleTimeout)
        urlRequest.httpMethod = "GET"
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        // Last, so no caller's header can ask for a compressed body (see the type's comment).
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = idleTimeout
        configuration.timeoutIntervalForResource = idleTimeout
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        let download = Download(request: request, finish: finish)
        let session = URLSession(configuration: configuration, delegate: download, delegateQueue: nil)
        download.start(session.dataTask(with: urlRequest))
        // The transfer goes on; the session is released once it ends.
        session.finishTasksAndInvalidate()
        return { download.cancel() }
    }
}

/// The state of one download, driven by URLSession's delegate callbacks.
private final class Download: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: mutable state lives in `state`, behind its lock.
    struct State {
        var task: URLSessionDataTask?
        var body = Data()
        var failure: PinStoreError?
        /// Redirects followed so far.
        var redirects = 0
    }

    let request: FingerprintListRequest
    let state = Locked(State())
    /// Where the outcome goes (once; later calls are ignored by the deadline's race).
    private let finish: @Sendable (Result<FingerprintListResponse, PinStoreError>) -> Void

    init(request: FingerprintListRequest, finish: @escaping @Sendable (Result<FingerprintListResponse, PinStoreError>) -> Void) {
        self.request = request
        self.finish = finish
    }

    func start(_ task: URLSessionDataTask) {
        state.withLock { $0.task = task }
        task.resume()
    }

    func cancel() {
        fail(PinStoreError(.network, "The \(request.document) download was cancelled."))
    }

    /// Records the first failure and cancels the transfer.
    private func fail(_ error: PinStoreError) {
        record(error)
        state.withLock { $0.task }?.cancel()
    }

    /// Records the first failure; the caller ends the transfer through a completion handler.
    private func record(_ error: PinStoreError) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        // Every Content-Encoding field, whatever its case: libcurl decodes each one.
        let encodings = ((response as? HTTPURLResponse)?.allHeaderFields ?? [:]).compactMap { name, value -> String? in
            guard (name as? String)?.lowercased() == "content-encoding", let value = value as? String else { return nil }
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty || trimmed.lowercased() == "identity" ? nil : trimmed
        }
        if let encoding = encodings.first {
            // The `.cancel` disposition ends the transfer. Measured (scripts/list-download-bomb.sh,
            // 1 GiB of zeros as gzip): the process peaks 33 MiB above a plain update; cancelling
            // the task here as well made FoundationNetworking inflate the whole body (1.19 GB).
            record(PinStoreError(.invalidListData, "The \(request.document) server sent a \(encoding)-encoded body though an unencoded one was asked for (Accept-Encoding: identity); it is refused and its transfer ended at the headers, since the size it inflates to cannot be bounded. Serve the \(request.document) without Content-Encoding."))
            completionHandler(.cancel)
            return
        }
        if response.expectedContentLength > Int64(request.maximumBodySize) {
            record(PinStoreError(.invalidListData, "The server announced \(response.expectedContentLength) bytes of \(request.document); the limit is \(request.maximumBodySize) bytes."))
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Nothing is kept once the download has failed, and no byte past the limit is kept:
        // pieces already queued by the transport still arrive after the cancellation.
        let tooLarge = state.withLock { state -> Bool in
            guard state.failure == nil else { return false }
            guard state.body.count + data.count <= request.maximumBodySize else {
                state.body = Data()
                return true
            }
            state.body.append(data)
            return false
        }
        if tooLarge {
            fail(PinStoreError(.invalidListData, "The \(request.document) download is larger than the \(request.maximumBodySize)-byte limit; stopped reading."))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        let followed = state.withLock { $0.redirects }
        if let refusal = DownloadRedirectRule.refusal(of: newRequest.url, for: request, followed: followed) {
            // Declining the redirect completes the task with the 3xx response; cancelling here
            // as well would make FoundationNetworking trap on Linux.
            record(PinStoreError(.network, refusal))
            completionHandler(nil)
            return
        }
        state.withLock { $0.redirects += 1 }
        completionHandler(newRequest)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let result = state.withLock { state -> Result<FingerprintListResponse, PinStoreError> in
            if let failure = state.failure {
                return .failure(failure)
            }
            if let error {
                let nsError = error as NSError
                // The idle timeout is the deadline's number of seconds: when it fires, the
                // deadline has passed too.
                guard nsError.code != NSURLErrorTimedOut else { return .failure(request.deadlineExceeded()) }
                return .failure(PinStoreError(.network, "The \(request.document) could not be downloaded: \(nsError.localizedDescription)"))
            }
            guard let http = task.response as? HTTPURLResponse else {
                return .failure(PinStoreError(.network, "The \(request.document) server sent no HTTP response."))
            }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name] = value }
            }
            return .success(FingerprintListResponse(statusCode: http.statusCode, headers: headers, body: state.body))
        }
        finish(result)
    }
}
