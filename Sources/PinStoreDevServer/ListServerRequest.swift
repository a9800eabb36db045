import Foundation

/// One HTTP request as the development list server received it.
package struct ListServerRequest: Sendable {
    /// The HTTP method, e.g. `GET`.
    package var method: String
    /// The request target exactly as sent, e.g. `/pins/list.json?x=1`.
    package var uri: String
    /// The request headers in the order received, names as sent.
    package var headers: [(String, String)]

    /// Creates a request (tests build these to call responders directly).
    package init(method: String = "GET", uri: String = "/", headers: [(String, String)] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
    }

    /// The first value of the header `name`, compared ASCII case-insensitively as HTTP requires.
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }
}
