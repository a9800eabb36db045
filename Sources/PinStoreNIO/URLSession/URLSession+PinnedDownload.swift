#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore

extension URLSession {
    /// Downloads `url` to a temporary file over this pinned session: the pinned equivalent of
    /// `download(from:)`, which FoundationNetworking cannot run on a pinned session (it hands a
    /// downloaded file only to its own protocols, so the task fails with `.unsupportedURL`).
    ///
    /// ```swift
    /// let session = URLSession(configuration: .pinned(by: store))
    /// let (file, response) = try await session.pinnedDownload(from: url)   // was: session.download(from: url)
    /// try FileManager.default.moveItem(at: file, to: destination)
    /// ```
    ///
    /// The body is written to the file piece by piece as it arrives, never held whole in
    /// memory: at most a few MiB are in flight, as for a delegate-based data task on a pinned
    /// session (reading from the server pauses while the file write is behind). The connection
    /// is pinned exactly as for `data(from:)`, and comes from the same pool.
    ///
    /// Nothing bounds the file's size but the server: give the configuration a
    /// `timeoutIntervalForResource` (which the pinned transport enforces), and move or check
    /// the file before trusting its length.
    ///
    /// As with `download(from:)`, the file is yours: move it or delete it (it lives in the
    /// temporary directory, readable by this user only, named `pinstore-download-<UUID>.tmp`),
    /// and an HTTP error status is not an error: the file holds the error's body. When the
    /// download fails, no file is left behind.
    ///
    /// - Throws: `URLError` as `data(from:)` does: a refused server is
    ///   `.serverCertificateUntrusted` with the `PinningFailure` under `NSUnderlyingErrorKey`
    ///   (`PinningFailure(unwrapping:)` finds it). `.unsupportedURL` when this session was not
    ///   made with `URLSessionConfiguration.pinned(by:...)` (an unpinned session is never used
    ///   silently: call `download(from:)` there), `.cannotCreateFile` or `.cannotWriteToFile`
    ///   when the file cannot be made or written, `.cancelled` when the calling task is
    ///   cancelled.
    public func pinnedDownload(from url: URL) async throws -> (URL, URLResponse) {
        try await pinnedDownload(for: URLRequest(url: url))
    }

    /// ``pinnedDownload(from:)`` for a request (method, headers, body).
    ///
    /// Named apart from FoundationNetworking's `download(for:delegate:)` on purpose: an overload
    /// of the same name could resolve to the system's download, which the pinned session
    /// refuses, and this one refuses an unpinned session rather than download unpinned.
    public func pinnedDownload(for request: URLRequest) async throws -> (URL, URLResponse) {
        // The pinned protocol must come first: a configuration with another https-handling
        // protocol class ahead of it would carry the download through that one, unpinned.
        guard let first = configuration.protocolClasses?.first, first is any PinnedProtocolClass.Type,
              PinnedSessionRegistry.transport(of: configuration) != nil else {
            throw PinnedHTTPSTransport.urlError(
                .unsupportedURL, request.url,
                "pinnedDownload needs a session made with URLSessionConfiguration.pinned(by:); this one is not pinned, and a download through it would check no pin. Use download(from:) on an unpinned session.")
        }
        try Task.checkCancellation()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-download-\(UUID().uuidString).tmp")
        // Created empty with mode 0600 in one step (O_EXCL, no link followed), before any byte
        // of the body is written: FileManager.createFile would write it with the umask's mode
        // first and narrow it afterwards, leaving a moment where others could open it.
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw PinnedHTTPSTransport.urlError(.cannotCreateFile, request.url,
                                                "The download's temporary file \(file.path) could not be created: \(String(cString: strerror(errno))).")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let writer = PinnedDownloadWriter(handle: handle, file: file)
        // A session of its own for the delegate that writes the file: the same pinned
        // configuration, so the same pinned transport, pool and settings. One delegate call at a
        // time, in order.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: configuration, delegate: writer, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        do {
            let response = try await writer.run(session.dataTask(with: request))
            return (file, response)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw error
        }
    }
}

/// Writes one pinned data task's body to a file as it arrives, and resumes the caller at the end.
private final class PinnedDownloadWriter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the state is behind a lock; the delegate methods run on one serial queue.
    private struct State {
        var handle: FileHandle?
        var response: URLResponse?
        var writeError: (any Error)?
        var continuation: CheckedContinuation<URLResponse, any Error>?
    }

    private let state: Locked<State>
    private let file: URL

    init(handle: FileHandle, file: URL) {
        state = Locked(State(handle: handle))
        self.file = file
    }

    /// Starts `task` and waits for its end: the final response, or the error.
    func run(_ task: URLSessionDataTask) async throws -> URLResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.continuation = continuation }
                // Resumed only now, with the continuation in place: a cancel that came first
                // ends the task at once and its completion finds the continuation.
                task.resume()
                if Task.isCancelled { task.cancel() }
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        state.withLock { $0.response = response }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Written before this returns: the transport reads on only once the delegate has had
        // the piece, so what waits in memory stays bounded.
        let failed = state.withLock { state -> Bool in
            guard state.writeError == nil, let handle = state.handle else { return false }
            do {
                try handle.write(contentsOf: data)
                return false
            } catch {
                state.writeError = error
                return true
            }
        }
        if failed { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<URLResponse, any Error>?, Result<URLResponse, any Error>) in
            defer {
                state.continuation = nil
                state.handle = nil
            }
            var closeError: (any Error)?
            do { try state.handle?.close() } catch { closeError = error }
            let result: Result<URLResponse, any Error>
            if let writeError = state.writeError ?? closeError {
                result = .failure(PinnedHTTPSTransport.urlError(.cannotWriteToFile, task.originalRequest?.url,
                                                                "The download could not be written to \(file.path): \(writeError)",
                                                                underlying: writeError))
            } else if let error {
                result = .failure(error)
            } else if let response = task.response ?? state.response {
                result = .success(response)
            } else {
                result = .failure(PinnedHTTPSTransport.urlError(.badServerResponse, task.originalRequest?.url,
                                                                "The download ended without a response."))
            }
            return (state.continuation, result)
        }
        continuation?.resume(with: result)
    }
}
#endif
