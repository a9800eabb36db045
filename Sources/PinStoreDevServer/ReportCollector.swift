import Foundation
import PinStore

/// A pin-failure report collector for development: every JSON object POSTed to it (any path)
/// is written, byte for byte, to a new file in ``directory``, named
/// `report-<UTC time>-<sequence>-<random>.json`; nothing from the request but its body is kept. Serve it
/// with ``ListServer`` (loopback only), as `pinstore reports` does:
///
/// ```swift
/// let collector = try ReportCollector(directory: URL(fileURLWithPath: "reports"))
/// let server = try await ListServer.start(responder: collector.responder)
/// // configuration.reportURI = server.baseURL.appendingPathComponent("pin-reports")
/// ```
///
/// Answers `204` for a stored report, `400` for a body that is not a JSON object, `405` for
/// another method than POST, `500` when the file cannot be written.
package final class ReportCollector: Sendable {
    /// Where reports are written.
    package let directory: URL
    private let sequence = Locked(0)

    /// A collector writing into `directory`, created if needed.
    package init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
    }

    /// The responder to serve.
    package var responder: ListServerResponder {
        { [self] request in handle(request) }
    }

    /// Handles one request; also called by ``responder``.
    package func handle(_ request: ListServerRequest) -> ListServerResponse {
        guard request.method == "POST" else {
            return Self.text(405, "POST pin-failure reports (JSON) here\n", extra: [("Allow", "POST")])
        }
        guard (try? JSONSerialization.jsonObject(with: request.body)) is [String: Any] else {
            return Self.text(400, "the body is not a JSON object\n")
        }
        let number = sequence.withLock { value -> Int in
            value += 1
            return value
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withYear, .withMonth, .withDay, .withTime, .withTimeZone]   // 20261122T100000Z
        // The random part keeps names unique across runs writing into the same directory.
        let unique = UUID().uuidString.prefix(8).lowercased()
        let file = directory.appendingPathComponent("report-\(formatter.string(from: Date()))-\(String(format: "%06d", number))-\(unique).json")
        do {
            try request.body.write(to: file, options: .withoutOverwriting)
        } catch {
            return Self.text(500, "cannot write \(file.path): \(error.localizedDescription)\n")
        }
        return ListServerResponse(status: 204, headers: [("Location", "/" + file.lastPathComponent)])
    }

    /// The files written so far, oldest first.
    package func reportFiles() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasPrefix("report-") && $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    private static func text(_ status: Int, _ text: String, extra: [(String, String)] = []) -> ListServerResponse {
        ListServerResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + extra, body: Data(text.utf8))
    }
}
