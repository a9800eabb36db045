import Foundation

/// One HTTP request as the development list server received it.
package struct ListServerRequest: Sendable {
    /// The HTTP method, e.g. `GET`.
    package var method: String
    /// The request target exactly as sent, e.g. `/pins/list.json?x=1`.
    package var uri: String
    /// The request headers in the order received, names as sent.
    package var headers: [(String, String)]
    /// The request body (at most ``maximumBodySize`` bytes; a longer one is answered 413).
    package var body: Data

    /// Bytes of request body the server reads at most (a pin-failure report is a few KiB).
    package static let maximumBodySize = 1 << 20

    /// Creates a request (tests build these to call responders directly).
    package init(method: String = "GET", uri: String = "/", headers: [(String, String)] = [], body: Data = Data()) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name`, compared ASCII case-insensitively as HTTP requires.
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }

    /// Every value of the header `name`, one per field line in the order received (a list
    /// header such as `If-None-Match` may come on several lines).
    package func headerValues(_ name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.0.lowercased() == wanted }.map(\.1)
    }
}
