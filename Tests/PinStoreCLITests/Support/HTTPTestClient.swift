import Foundation
import PinStore
import PinStoreTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One plain HTTP GET through URLSession (FoundationNetworking on Linux), as a client would.
enum HTTPTestClient {
    struct Response {
        let status: Int
        let headers: [String: String]
        let body: Data

        /// A header value by case-insensitive name.
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// `timeout` is a hang guard (URLSession's idle timeout), not a speed check: the servers are
    /// on loopback, and a machine busy with builds can leave one without a turn for seconds.
    static func get(_ url: URL, headers: [String: String] = [:], timeout: TimeInterval = RunningProcess.hangGuard) async throws -> Response {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalAndRemoteCacheData, timeoutInterval: timeout)
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (body, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { fields[key] = value }
        }
        return Response(status: http.statusCode, headers: fields, body: body)
    }
}
