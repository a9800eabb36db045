import Foundation

/// What the development list server answers to one request.
package struct ListServerResponse: Sendable {
    /// The HTTP status code.
    package var status: Int
    /// Response headers. `Content-Length` is set by the server from ``body``.
    package var headers: [(String, String)]
    /// The response body.
    package var body: Data
    /// Seconds to wait before answering, to exercise client timeouts.
    package var delay: TimeInterval
    /// When set, the body is written one byte at a time, this many seconds apart, after the
    /// head (which announces the whole length): a server that keeps a download alive past any
    /// idle timeout and finishes it only when it likes.
    package var dripInterval: TimeInterval?

    /// Creates a response.
    package init(status: Int = 200, headers: [(String, String)] = [], body: Data = Data(), delay: TimeInterval = 0,
                 dripInterval: TimeInterval? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.dripInterval = dripInterval
    }
}

/// Computes the response to one request. Called on the server's event loop, so it must not
/// block for long; use ``ListServerResponse/delay`` to answer late.
package typealias ListServerResponder = @Sendable (ListServerRequest) -> ListServerResponse
