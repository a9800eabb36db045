#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreTestSupport
import Testing

/// What FoundationNetworking (swift-corelibs-foundation) does with a custom URLProtocol, shown
/// with minimal protocols and no network. The pinned transport works around each of these; if
/// one of these tests starts failing, corelibs changed and the workaround can be revisited.
///
/// Two more facts cannot be shown by a test, because the process would trap: a protocol that
/// hands a redirect back (`urlProtocol(_:wasRedirectedTo:redirectResponse:)`) hits corelibs'
/// `fatalError("...doesn't currently handle redirects directly.")`, and a download task
/// completes through a temporary-file property only corelibs' own protocols can set, so a
/// successful download from any other protocol force-unwraps nil in `download(from:)`. The
/// pinned transport follows redirects itself (asking the delegate) and fails download tasks
/// at once with `URLError(.unsupportedURL)`.
@Suite struct FoundationNetworkingBehaviourTests {
    @Test func completionHandlerKeepsOnlyTheLastPieceAProtocolLoads() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [TwoPieceProtocol.self]
        let (data, _) = try await URLSession(configuration: configuration).data(from: URL(string: "https://two.pieces.test/")!)
        // Both pieces were loaded; the completion handler sees the second only. Hence the pinned
        // transport hands completion handlers the body in one piece.
        #expect(String(decoding: data, as: UTF8.self) == "second")
    }

    @Test func sessionDelegateReceivesEveryPieceAProtocolLoads() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [TwoPieceProtocol.self]
        let delegate = PieceCollector()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        session.dataTask(with: URL(string: "https://two.pieces.test/")!).resume()
        _ = try await pollUntil(every: .milliseconds(20)) { delegate.pieces.withLock { $0.contains("done") } }
        #expect(delegate.pieces.withLock { $0 } == ["first ", "second", "done"])
    }
}

/// Loads a body in two pieces, on the task's work queue (where corelibs calls startLoading).
private final class TwoPieceProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let client,
              let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil) else { return }
        client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client.urlProtocol(self, didLoad: Data("first ".utf8))
        client.urlProtocol(self, didLoad: Data("second".utf8))
        client.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

private final class PieceCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `pieces` is locked.
    let pieces = Locked<[String]>([])

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        pieces.withLock { $0.append(String(decoding: data, as: UTF8.self)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        pieces.withLock { $0.append(error == nil ? "done" : "failed") }
    }
}
#endif
