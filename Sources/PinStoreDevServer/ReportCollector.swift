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
///
/// The directory is bounded (``Limits``): after each report is written, the oldest report
/// files go until at most `maximumFiles` remain and they take at most `maximumBytes` together
/// (the newest report always stays). A host that fails pinning in a loop therefore cannot fill
/// the disk of the machine collecting its reports.
package final class ReportCollector: Sendable {
    /// How much the collector keeps.
    package struct Limits: Sendable {
        /// Report files kept at most (default 1,000).
        package var maximumFiles: Int
        /// Bytes of report files kept at most (default 64 MiB).
        package var maximumBytes: Int

        package init(maximumFiles: Int = 1_000, maximumBytes: Int = 64 << 20) {
            self.maximumFiles = maximumFiles
            self.maximumBytes = maximumBytes
        }
    }

    /// Where reports are written.
    package let directory: URL
    /// What the collector keeps.
    package let limits: Limits
    private let sequence = Locked(0)
    /// Held while a report is written and the oldest dropped, so the files counted are the files kept.
    private let writing = Locked(())

    /// A collector writing into `directory`, created if needed.
    package init(directory: URL, limits: Limits = Limits()) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.limits = limits
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
            try writing.withLock { _ in
                try request.body.write(to: file, options: .withoutOverwriting)
                dropOldestBeyondLimits(keeping: file)
            }
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

    /// Removes the oldest report files until ``limits`` hold; `newest` (just written) stays.
    private func dropOldestBeyondLimits(keeping newest: URL) {
        guard let files = try? reportFiles() else { return }
        func size(_ file: URL) -> Int { (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0 }
        var count = files.count
        var total = files.reduce(0) { $0 + size($1) }
        // Oldest first, by name (UTC time, then sequence); the report just written is never a candidate.
        for oldest in files where oldest.lastPathComponent != newest.lastPathComponent {
            guard count > limits.maximumFiles || total > limits.maximumBytes else { break }
            total -= size(oldest)
            try? FileManager.default.removeItem(at: oldest)
            count -= 1
        }
    }

    private static func text(_ status: Int, _ text: String, extra: [(String, String)] = []) -> ListServerResponse {
        ListServerResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + extra, body: Data(text.utf8))
    }
}
