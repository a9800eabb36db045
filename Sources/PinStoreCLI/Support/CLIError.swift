import Foundation
import PinStore

/// A failure the tool reports as one line on standard error, exiting with status 1.
struct CLIError: Error, CustomStringConvertible {
    let message: String

    init(_ message: String) {
        self.message = message
    }

    /// Wraps a library error with what the tool was doing, e.g. `reading key.pem: ...`.
    init(_ context: String, _ error: any Error) {
        if let error = error as? PinStoreError {
            message = "\(context): \(error.reason)"
        } else {
            message = "\(context): \(error)"
        }
    }

    var description: String { message }
}

/// Output helpers: standard output is flushed on every line so a supervising process (tests,
/// scripts reading `pinstore serve`'s port) sees it at once.
enum Console {
    static func print(_ line: String = "") {
        write(Data((line + "\n").utf8))
    }

    /// Writes raw bytes to standard output. A closed pipe (`pinstore ... | head`) is not an
    /// error worth a crash: the rest of the output is dropped.
    static func write(_ data: Data) {
        try? FileHandle.standardOutput.write(contentsOf: data)
    }

    static func printError(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}
