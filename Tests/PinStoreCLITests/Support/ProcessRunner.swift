import Foundation
import PinStore
import PinStoreTestSupport

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
        let errorData = Locked(Data())
        let errorDone = DispatchSemaphore(value: 0)
        let errorHandle = stderr.fileHandleForReading
        Thread {
            let read = errorHandle.readDataToEndOfFile()
            errorData.withLock { $0 = read }
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
                             stderr: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }
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

/// The built `pinstore` executable, found next to the test bundle (`swift build` puts every
/// product in one folder), or in the package's default `.build/debug`.
enum PinstoreBinary {
    static var path: String? {
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL {
            folders.append(executable.deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        folders.append(TestResources.packageRoot.appendingPathComponent(".build/debug"))
        return folders.map { $0.appendingPathComponent("pinstore").path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `pinstore` with `arguments` to completion.
    static func run(_ arguments: [String], input: Data = Data()) async throws -> ProcessOutput {
        guard let path else {
            throw ProcessRunner.NotFound(description: "the pinstore executable was not found next to the test bundle; run `swift build` first")
        }
        return try await ProcessRunner.run(path, arguments, input: input)
    }
}

/// A long-running child (`pinstore serve`) whose output is collected while it runs.
final class RunningProcess: @unchecked Sendable {
    // @unchecked: the Process is only started, signalled and waited on; output is locked.
    let process = Process()
    private let output = Locked(Data())
    private let errors = Locked(Data())

    init(_ executable: String, _ arguments: [String]) throws {
        signal(SIGPIPE, SIG_IGN)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        let output = self.output, errors = self.errors
        stdout.fileHandleForReading.readabilityHandler = { handle in let more = handle.availableData; output.withLock { $0.append(more) } }
        stderr.fileHandleForReading.readabilityHandler = { handle in let more = handle.availableData; errors.withLock { $0.append(more) } }
        try process.run()
    }

    var stdout: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }
    var stderr: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

    /// Waits (up to `timeout` seconds) until standard output matches `pattern`; returns the
    /// first match.
    func waitForOutput(matching pattern: String, timeout: TimeInterval = 20) async throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = stdout
            if let range = text.range(of: pattern, options: .regularExpression) {
                return String(text[range])
            }
            if !process.isRunning { return nil }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return nil
    }

    /// Sends `signal` and waits (up to `timeout` seconds) for the exit status.
    func stop(with signalNumber: Int32 = SIGINT, timeout: TimeInterval = 10) async throws -> Int32? {
        if process.isRunning { kill(process.processIdentifier, signalNumber) }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return process.terminationStatus
    }
}
