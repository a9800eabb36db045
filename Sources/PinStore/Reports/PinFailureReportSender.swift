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

/// A delivery's time limit, kept whether or not the delivery cooperates: when it passes, the
/// delivery is cancelled and abandoned, and the caller goes on at once with a
/// ``PinFailureReportDeliveryError``. (A `URLRequest`'s own `timeoutInterval` is not enough:
/// FoundationNetworking lets the session's 60-second default win over it, and a sender that
/// ignores cancellation would otherwise hold the reporter as long as it likes.)
package enum PinFailureReportDeadline {
    /// The error of a delivery whose limit passed.
    static func timedOut(seconds: TimeInterval, uri: URL) -> PinFailureReportDeliveryError {
        PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) did not answer within \(seconds) s; the report is dropped")
    }

    /// Runs `delivery`, giving up on it after `seconds` (about `uri`, for the error).
    package static func run(seconds: TimeInterval, uri: URL,
                            _ delivery: @escaping @Sendable () async throws -> Void) async throws {
        let waiter = Locked<CheckedContinuation<Void, any Error>?>(nil)
        let finish: @Sendable (Result<Void, any Error>) -> Void = { result in
            let continuation = waiter.withLock { waiter -> CheckedContinuation<Void, any Error>? in
                defer { waiter = nil }
                return waiter
            }
            continuation?.resume(with: result)
        }
        let work = Locked<(delivery: Task<Void, Never>?, timer: Task<Void, Never>?)>((nil, nil))
        let cancelAll: @Sendable () -> Void = {
            let tasks = work.withLock { $0 }
            tasks.delivery?.cancel()
            tasks.timer?.cancel()
        }
        // Whichever finished first, the other has nothing left to do; on every exit, the
        // deadline's error included (a `cancelAll()` after the wait was skipped when it threw,
        // so a delivery past its limit was abandoned but never cancelled, and a collector that
        // dripped its answer kept the sender's one connection).
        defer { cancelAll() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiter.withLock { $0 = continuation }
                let delivery = Task {
                    do {
                        try await delivery()
                        finish(.success(()))
                    } catch {
                        finish(.failure(error))
                    }
                }
                // Clamped (a NaN or negative limit means at once) so the conversion cannot trap.
                let nanoseconds = seconds.isNaN ? 0 : UInt64(min(max(seconds, 0), 86_400) * 1_000_000_000)
                let timer = Task {
                    guard (try? await Task.sleep(nanoseconds: nanoseconds)) != nil else { return }
                    finish(.failure(timedOut(seconds: seconds, uri: uri)))
                }
                work.withLock { $0 = (delivery, timer) }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
            cancelAll()
        }
    }
}

/// Sends reports with URLSession (FoundationNetworking on Linux) on an ephemeral session of its
/// own, made with the sender: never the app's sessions and never a pinned one, so a report
/// reaches the collector even while a pinned host (possibly the collector's own) is being
/// intercepted; only the platform's normal trust evaluation applies. No cookies, cache or
/// credentials are kept or sent; the request carries the report and `Content-Type` only;
/// redirects are not followed; a delivery ends after the reporter's time limit whatever the
/// collector does (``PinFailureReportDeadline``). One session for every report, so a busy
/// collector costs one kept-alive connection rather than a session and a handshake per report.
package final class URLSessionReportSender: PinFailureReportSender {
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
        let session = self.session, prepared = request
        let answer = Locked<URLResponse?>(nil)
        do {
            try await PinFailureReportDeadline.run(seconds: timeout, uri: uri) {
                let response = try await Self.upload(prepared, body: body, on: session)
                answer.withLock { $0 = response }
            }
        } catch let error as PinFailureReportDeliveryError {
            throw error
        } catch let error as URLError where error.code == .timedOut {
            // The request's own timer may fire a moment before the deadline's: the same limit
            // passed, so the same error.
            throw PinFailureReportDeadline.timedOut(seconds: timeout, uri: uri)
        } catch {
            throw PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) could not be reached: \((error as NSError).localizedDescription)")
        }
        guard let response = answer.withLock({ $0 }) else {
            throw PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) gave no response")
        }
        guard let http = response as? HTTPURLResponse, (200..<300).contains(http.statusCode) else {
            let status = (response as? HTTPURLResponse)?.statusCode
            throw PinFailureReportDeliveryError(description: "the collector at \(uri.absoluteString) answered \(status.map { "HTTP \($0)" } ?? "without HTTP")")
        }
    }
}

extension URLSessionReportSender {
    /// One POST on `session`. Cancelling the calling task (the deadline does) cancels the
    /// transfer, which closes its connection: the session keeps one connection to the collector,
    /// and a collector that dripped its answer would otherwise hold it, and every later report,
    /// after the deadline gave up on the delivery.
    private static func upload(_ request: URLRequest, body: Data, on session: URLSession) async throws -> URLResponse {
        let transfer = Locked<(task: URLSessionUploadTask?, cancelled: Bool)>((nil, false))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URLResponse, any Error>) in
                let task = session.uploadTask(with: request, from: body) { _, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response {
                        continuation.resume(returning: response)
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                let cancelled = transfer.withLock { state -> Bool in
                    state.task = task
                    return state.cancelled
                }
                task.resume()
                if cancelled { task.cancel() }
            }
        } onCancel: {
            let task = transfer.withLock { state -> URLSessionUploadTask? in
                state.cancelled = true
                return state.task
            }
            task?.cancel()
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
