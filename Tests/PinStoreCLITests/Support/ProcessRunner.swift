import Foundation

/// The outcome of one child process.
struct ProcessOutput: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs a program to completion with the given standard input, collecting its output.
enum ProcessRunner {
    struct NotFound: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs the program on a global-queue thread, so waiting never holds a Swift concurrency
    /// thread (the machine has two).
    static func run(_ executable: String, _ arguments: [String], input: Data = Data()) async throws -> ProcessOutput {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runBlocking(executable, arguments, input: input) })
            }
        }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String], input: Data) throws -> ProcessOutput {
        // A child that exits without reading its input must not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read stderr on its own thread so a chatty child never blocks on a full pipe.
        let errorData = LockedData()
        let errorDone = DispatchSemaphore(value: 0)
        let errorHandle = stderr.fileHandleForReading
        Thread {
            errorData.set(errorHandle.readDataToEndOfFile())
            errorDone.signal()
        }.start()
        if !input.isEmpty {
            try? stdin.fileHandleForWriting.write(contentsOf: input)
        }
        try? stdin.fileHandleForWriting.close()
        let outData = stdout.fileHandleForReading.readDataToEndOfFile()
        errorDone.wait()
        process.waitUntilExit()
        return ProcessOutput(status: process.terminationStatus,
                             stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errorData.get(), as: UTF8.self))
    }
}

/// `Data` behind a lock, for the stderr reader thread.
final class LockedData: @unchecked Sendable {
    // @unchecked: `data` is only touched while `lock` is held.
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}

/// The system `openssl` command line: the independent implementation interop tests compare against.
enum OpenSSLCommand {
    static var path: String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ arguments: [String], input: Data = Data()) async throws -> ProcessOutput {
        guard let path else { throw ProcessRunner.NotFound(description: "the openssl command line is not installed") }
        return try await ProcessRunner.run(path, arguments, input: input)
    }
}
