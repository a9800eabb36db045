#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore

/// The `URLProtocol` a pinned session carries every http(s) request through.
///
/// URLSession instantiates protocol classes itself and tells them nothing about the session,
/// so each pinned configuration gets its own class: `Slot` is a type that encodes the index of
/// the configuration's ``PinnedHTTPSTransport`` in ``PinnedSessionRegistry`` (see
/// ``PinnedSessionSlot``). Only public URLProtocol API is used.
final class PinnedHTTPSURLProtocol<Slot: PinnedSessionSlot>: URLProtocol {
    private let loading = Locked<LoadState>(LoadState())

    private struct LoadState {
        var task: Task<Void, Never>?
        var stopped = false
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
        let transport = PinnedSessionRegistry.transport(at: Slot.index)
        let request = self.request
        let isUploadTask = task is URLSessionUploadTask
        let reporter = ClientReporter(self)
        let task = Task {
            guard let transport else {
                reporter.fail(PinnedHTTPSTransport.urlError(.unknown, request.url, "No pinning transport is registered for this session."))
                return
            }
            do {
                let (response, body) = try await transport.load(request, isUploadTask: isUploadTask)
                reporter.finish(response, body)
            } catch {
                reporter.fail(error)
            }
        }
        loading.withLock { $0.task = task }
    }

    override func stopLoading() {
        // URLSession reports the cancellation itself; after this the client hears nothing more.
        let task = loading.withLock { state in
            state.stopped = true
            return state.task
        }
        task?.cancel()
    }

    fileprivate var isStopped: Bool {
        loading.withLock { $0.stopped }
    }
}

/// Hands results to the URL loading system from the loading task.
///
/// `@unchecked Sendable`: URLProtocol is not Sendable, but its client is meant to be called
/// from the protocol's own loading thread, and this reporter is used by one task only.
private struct ClientReporter<Slot: PinnedSessionSlot>: @unchecked Sendable {
    let urlProtocol: PinnedHTTPSURLProtocol<Slot>

    init(_ urlProtocol: PinnedHTTPSURLProtocol<Slot>) {
        self.urlProtocol = urlProtocol
    }

    func finish(_ response: HTTPURLResponse, _ body: Data) {
        guard !urlProtocol.isStopped, let client = urlProtocol.client else { return }
        client.urlProtocol(urlProtocol, didReceive: response, cacheStoragePolicy: .notAllowed)
        // One call with the whole body: corelibs' completion-handler path keeps only the data
        // of the last didLoad call.
        if !body.isEmpty {
            client.urlProtocol(urlProtocol, didLoad: body)
        }
        client.urlProtocolDidFinishLoading(urlProtocol)
    }

    func fail(_ error: any Error) {
        guard !urlProtocol.isStopped, let client = urlProtocol.client else { return }
        client.urlProtocol(urlProtocol, didFailWithError: error)
    }
}
#endif
