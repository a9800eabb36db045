import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivers one encoded pin-failure report to a collector. The store's reporter calls it from
/// its background task, one report at a time; an error means the report is dropped (and counted).
package protocol PinFailureReportSender: Sendable {
    /// POSTs `body` (a ``PinFailureReport`` as JSON) to `uri`; throws when it was not accepted.
    func send(_ body: Data, to uri: URL, timeout: TimeInterval) async throws
}

/// Why a collector did not take a report.
package struct PinFailureReportDeliveryError: Error, Sendable, CustomStringConvertible {
    /// What happened.
    package let description: String

    package init(description: String) {
        self.description = description
    }
}

/// Sends reports with URLSession (FoundationNetworking on Linux) on an ephemeral session of its
/// own, made with the sender: never the app's sessions and never a pinned one, so a report
/// reaches the collector even while a pinned host (possibly the collector's own) is being
/// intercepted; only the platform's normal trust evaluation applies. No cookies, cache or
/// credentials are kept or sent; the request carries the report and `Content-Type` only;
/// redirects are not followed. One session for every report, so a busy collector costs one
/// kept-alive connection rather than a session and a handshake per report.
final class URLSessionReportSender: PinFailureReportSender {
    private let session: URLSession

    package init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpMaximumConnectionsPerHost = 1
        session = URLSession(configuration: configuration, delegate: RefuseRedirects(), delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    package func send(_ body: Data, to uri: URL, timeout: TimeInterval) async throws {
        var request = URLRequest(url: uri, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.httpShouldHandleCookies = false
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let response: URLResponse
        do {
            (_, response) = try await session.upload(for: request, from: body)
        } catch {
            throw PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) could not be reached: \((error as NSError).localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse, (200..<300).contains(http.statusCode) else {
            let status = (response as? HTTPURLResponse)?.statusCode
            throw PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) answered \(status.map { "HTTP \($0)" } ?? "without HTTP")")
        }
    }
}

/// Reports are not followed through redirects: the collector configured is the only place a
/// report goes (a 3xx answer counts as a failed delivery).
private final class RefuseRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
