import Foundation
import Logging
import PinStore

/// A swift-log handler that keeps every message, for tests about what the library logs.
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
    }

    final class Box: Sendable {
        let records = Locked<[Record]>([])
        var all: [Record] { records.withLock { $0 } }
    }

    let box: Box
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        box.records.withLock { $0.append(Record(level: event.level, message: event.message.description)) }
    }

    /// A logger recording into a fresh box.
    static func logger() -> (Logger, Box) {
        let box = Box()
        return (Logger(label: "test") { _ in RecordingLogHandler(box: box) }, box)
    }
}
