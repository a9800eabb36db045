#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import Logging
import PinStore

/// The `URLProtocol` a pinned session carries every http(s) request through.
///
/// URLSession instantiates protocol classes itself and tells them nothing about the session,
/// so each pinned configuration gets its own class: `Slot` is a type that encodes the index of
/// the configuration's ``PinnedHTTPSTransport`` in ``PinnedSessionRegistry`` (see
/// ``PinnedSessionSlot``).
final class PinnedHTTPSURLProtocol<Slot: PinnedSessionSlot>: URLProtocol {
    private let loading = Locked<LoadState>(LoadState())

    private struct LoadState {
        var task: Task<Void, Never>?
        /// The first hop while no task runs the load (``PinnedHTTPSTransport/finishWithoutTask(_:continueInTask:)``).
        var firstHop: PinnedConnectionPool.Ticket?
        var stopped = false
        /// Where this object counts itself (its transport's), once `startLoading` found it.
        var liveObjects: LiveRequestObjects?
    }

    deinit {
        loading.withLock { $0.liveObjects }?.freed(.urlProtocol)
    }

    override class func canInit(with request: URLRequest) -> Bool {
        // Claim plain http too, only to refuse it: otherwise the built-in protocol would carry
        // it unpinned.
        guard let scheme = request.url?.scheme?.lowercased() else { return false }
        return scheme == "https" || scheme == "http"
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    override class func requestIsCacheEquivalent(_ a: URLRequest, to b: URLRequest) -> Bool {
        a == b
    }

    override func startLoading() {
        // On the task's work queue (corelibs calls startLoading there): the one place the
        // introspection may read the session's task registry.
        let request = self.request
        let introspection: URLSessionTaskIntrospection
        do {
            introspection = try URLSessionTaskIntrospection(task: task)
        } catch {
            // No work queue to hand the failure to may be known: this is that queue (corelibs
            // calls startLoading on it), so the client is told right here.
            PinnedSessionRegistry.transport(at: Slot.index)?.logger.error(
                "pinned session refused a task: FoundationNetworking's internals are not as expected",
                metadata: ["pinstore.field": "\(error.field)", "pinstore.reason": "\(error)"])
            client?.urlProtocol(self, didFailWithError: PinnedHTTPSTransport.urlError(.unknown, request.url, "\(error)", underlying: error))
            return
        }
        let reporter = ClientReporter(self, queue: introspection.workQueue)
        guard let transport = PinnedSessionRegistry.transport(at: Slot.index) else {
            reporter.fail(PinnedHTTPSTransport.urlError(.unknown, request.url, "No pinning transport is registered for this session."))
            return
        }
        transport.liveObjects.made(.urlProtocol)
        loading.withLock { $0.liveObjects = transport.liveObjects }
        if task is URLSessionDownloadTask {
            // corelibs hands a download's result to its completion handler or delegate from a
            // temporary-file property only its own protocols can set; without it
            // `download(from:)` traps. Fail at once instead.
            reporter.fail(PinnedHTTPSTransport.urlError(
                .unsupportedURL, request.url,
                "Download tasks cannot run on a pinned session on Linux (FoundationNetworking lets only its own protocols hand over the downloaded file). Use session.pinnedDownload(from:) instead of download(from:): it streams the body to a temporary file and returns it the same way."))
            return
        }
        let settings = transport.settings(of: introspection.session)
        let sink: any PinnedHTTPSTransport.Sink = introspection.reportsToSessionDelegate && task is URLSessionDataTask
            ? StreamingSink(reporter: reporter, delegateQueue: introspection.session.delegateQueue)
            : WholeSink(reporter: reporter)
        let uploadBody = introspection.uploadBody
        let decider = RedirectDelegate(task: task, session: introspection.session)?.decider
        // When the body is at hand, the request goes to the pool right here instead of after a
        // task has been scheduled: one thread hop less on every request.
        var started: PinnedHTTPSTransport.Started?
        var readyBody: Data?
        switch (request.httpBody, uploadBody, request.httpBodyStream) {
        case (let body?, _, _), (nil, .data(let body)?, _):
            readyBody = body
            started = transport.start(request, settings: settings, body: body, sink: sink)
        case (nil, nil, nil):
            started = transport.start(request, settings: settings, body: nil, sink: sink)
        default:
            break
        }
        let loading = self.loading
        let runInTask: @Sendable () -> Void = { [started, readyBody] in
            let work = Task {
                do {
                    var body = readyBody
                    if body == nil, started == nil {
                        body = try requestBody(of: request, upload: uploadBody)
                    }
                    let (response, data) = try await transport.load(request, settings: settings, body: body, sink: sink,
                                                                    redirectDecider: decider, started: started)
                    sink.complete(response, data)
                } catch {
                    reporter.fail(error)
                }
            }
            let stopped = loading.withLock { state -> Bool in
                state.task = work
                return state.stopped
            }
            if stopped { work.cancel() }
        }
        guard let started, case .success(let hop)? = started.firstHop else {
            runInTask()
            return
        }
        // The first hop is with the pool already: most loads end with it, on the event loop, and
        // need no task; a redirect or a failure continues in one.
        loading.withLock { $0.firstHop = hop.ticket }
        transport.finishWithoutTask(started, continueInTask: runInTask)
    }

    override func stopLoading() {
        // URLSession reports the cancellation itself; after this the client hears nothing more.
        let (task, firstHop) = loading.withLock { state in
            state.stopped = true
            return (state.task, state.firstHop)
        }
        task?.cancel()
        firstHop?.cancel()
    }

    fileprivate var isStopped: Bool {
        loading.withLock { $0.stopped }
    }
}

/// The request body: `httpBodyStream`, or the body corelibs keeps for an upload task.
private func requestBody(of request: URLRequest, upload: URLSessionTaskIntrospection.UploadBody?) throws -> Data? {
    switch upload {
    case .data(let data):
        return data
    case .file(let url):
        do {
            return try Data(contentsOf: url)
        } catch {
            throw PinnedHTTPSTransport.urlError(.fileDoesNotExist, request.url, "The upload file \(url.path) could not be read: \(error)")
        }
    case nil:
        break
    }
    guard let stream = request.httpBodyStream else { return nil }
    var data = Data()
    stream.open()
    defer { stream.close() }
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = stream.read(&buffer, maxLength: buffer.count)
        if count < 0 {
            throw PinnedHTTPSTransport.urlError(.requestBodyStreamExhausted, request.url,
                                                "The request body stream failed: \(stream.streamError.map { "\($0)" } ?? "unknown error").")
        }
        if count == 0 { break }
        data.append(buffer, count: count)
    }
    return data
}

/// Asks the task's (or the session's) delegate about each redirect, on the session's delegate
/// queue, as URLSession does. corelibs offers a protocol no way to hand a redirect back to the
/// session (`urlProtocol(_:wasRedirectedTo:redirectResponse:)` traps there), so the transport
/// follows redirects itself and asks the delegate here.
private struct RedirectDelegate: @unchecked Sendable {
    // @unchecked: the delegate, session and task are used on the delegate queue only, as
    // URLSession itself uses them.
    let delegate: any URLSessionTaskDelegate
    let session: URLSession
    let task: URLSessionTask

    init?(task: URLSessionTask?, session: URLSession?) {
        guard let task, let session,
              let delegate = task.delegate ?? (session.delegate as? URLSessionTaskDelegate) else { return nil }
        self.delegate = delegate
        self.session = session
        self.task = task
    }

    var decider: PinnedHTTPSTransport.RedirectDecider {
        let asking = self
        return { response, request in
            await withCheckedContinuation { continuation in
                asking.session.delegateQueue.addOperation {
                    asking.delegate.urlSession(asking.session, task: asking.task, willPerformHTTPRedirection: response,
                                               newRequest: request) { decided in
                        continuation.resume(returning: decided)
                    }
                }
            }
        }
    }
}

/// Hands results to the URL loading system, always on the task's work queue: corelibs' client
/// reads the session's task registry, which only that queue may touch (the SIGSEGV under load
/// came from calling it from a concurrency thread). Nothing is reported after `stopLoading`.
private struct ClientReporter<Slot: PinnedSessionSlot>: @unchecked Sendable {
    // @unchecked: the protocol object is only touched on `queue`.
    let urlProtocol: PinnedHTTPSURLProtocol<Slot>
    let queue: DispatchQueue

    init(_ urlProtocol: PinnedHTTPSURLProtocol<Slot>, queue: DispatchQueue) {
        self.urlProtocol = urlProtocol
        self.queue = queue
    }

    private func onQueue(_ body: @escaping @Sendable (PinnedHTTPSURLProtocol<Slot>, any URLProtocolClient) -> Void) {
        // The protocol object is touched on `queue` only, as corelibs itself does.
        nonisolated(unsafe) let urlProtocol = self.urlProtocol
        queue.async {
            guard !urlProtocol.isStopped, let client = urlProtocol.client else { return }
            body(urlProtocol, client)
        }
    }

    /// The whole response at once (completion handlers keep only the last `didLoad`).
    func deliver(_ response: HTTPURLResponse, _ body: Data) {
        onQueue { urlProtocol, client in
            client.urlProtocol(urlProtocol, didReceive: response, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty {
                client.urlProtocol(urlProtocol, didLoad: body)
            }
            client.urlProtocolDidFinishLoading(urlProtocol)
        }
    }

    func response(_ response: HTTPURLResponse) {
        onQueue { urlProtocol, client in
            client.urlProtocol(urlProtocol, didReceive: response, cacheStoragePolicy: .notAllowed)
        }
    }

    func data(_ data: Data, then: @escaping @Sendable () -> Void) {
        onQueue { urlProtocol, client in
            client.urlProtocol(urlProtocol, didLoad: data)
            then()
        }
    }

    func finish() {
        onQueue { urlProtocol, client in
            client.urlProtocolDidFinishLoading(urlProtocol)
        }
    }

    func fail(_ error: any Error) {
        onQueue { urlProtocol, client in
            client.urlProtocol(urlProtocol, didFailWithError: error)
        }
    }
}

/// Delivers the whole response once the transport has it (completion handlers keep only the
/// last `didLoad`, so the body goes in one piece).
private struct WholeSink<Slot: PinnedSessionSlot>: PinnedHTTPSTransport.Sink {
    let reporter: ClientReporter<Slot>
    private let delivered = Locked(false)

    init(reporter: ClientReporter<Slot>) {
        self.reporter = reporter
    }

    var streams: Bool { false }
    func receive(_ response: HTTPURLResponse) {}
    func receive(_ data: Data, resume: @escaping @Sendable () -> Void) -> Bool { true }

    func complete(_ response: HTTPURLResponse, _ data: Data) {
        guard !delivered.withLock({ done in defer { done = true }; return done }) else { return }
        reporter.deliver(response, data)
    }
}

/// Streams the body to the session delegate piece by piece. corelibs queues each piece as an
/// operation on the delegate queue without limit, so backpressure comes from a marker operation
/// queued behind each piece: reading pauses while more than ``highWater`` bytes are queued but
/// not yet handed to the delegate, and resumes below ``lowWater``.
private struct StreamingSink<Slot: PinnedSessionSlot>: PinnedHTTPSTransport.Sink {
    static var highWater: Int { 4 * 1024 * 1024 }
    static var lowWater: Int { 1024 * 1024 }

    let reporter: ClientReporter<Slot>
    let delegateQueue: OperationQueue?
    private let outstanding = Locked(Outstanding())
    private let finished = Locked(false)

    private struct Outstanding {
        var bytes = 0
        var resume: (@Sendable () -> Void)?
    }

    init(reporter: ClientReporter<Slot>, delegateQueue: OperationQueue?) {
        self.reporter = reporter
        self.delegateQueue = delegateQueue
    }

    var streams: Bool { true }

    func receive(_ response: HTTPURLResponse) {
        reporter.response(response)
    }

    func complete(_ response: HTTPURLResponse, _ data: Data) {
        guard !finished.withLock({ done in defer { done = true }; return done }) else { return }
        reporter.finish()
    }

    func receive(_ data: Data, resume: @escaping @Sendable () -> Void) -> Bool {
        let count = data.count
        let outstanding = self.outstanding
        let queued = outstanding.withLock { state -> Int in
            state.bytes += count
            return state.bytes
        }
        let delegateQueue = self.delegateQueue
        reporter.data(data) {
            // Runs on the work queue right after corelibs queued the delegate call: the marker
            // behind it runs once the delegate has the piece.
            let acknowledge: @Sendable () -> Void = {
                let wake = outstanding.withLock { state -> (@Sendable () -> Void)? in
                    state.bytes -= count
                    guard state.bytes <= Self.lowWater, let resume = state.resume else { return nil }
                    state.resume = nil
                    return resume
                }
                wake?()
            }
            if let delegateQueue { delegateQueue.addOperation(acknowledge) } else { acknowledge() }
        }
        guard queued > Self.highWater else { return true }
        let resumeNow = outstanding.withLock { state -> Bool in
            if state.bytes <= Self.lowWater { return true }
            state.resume = resume
            return false
        }
        if resumeNow { return true }
        return false
    }
}

extension PinnedHTTPSURLProtocol: PinnedProtocolClass {
    static var slotIndex: Int { Slot.index }
}
#endif
