import Foundation
import PinStore
import PinStoreTestSupport

/// Runs a program to completion with the given standard input, collecting its output.
enum ProcessRunner {
    struct NotFound: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ executable: String, _ arguments: [String], input: Data = Data()) async throws -> ProcessOutput {
        try await ChildProcess.run(executable, arguments, input: input)
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
final class RunningProcess: Sendable {
    let child: ChildProcess

    init(_ executable: String, _ arguments: [String]) throws {
        child = try ChildProcess(executable, arguments)
    }

    var stdout: String { child.stdout }
    var stderr: String { child.stderr }

    /// How long a wait on a child's event may last before the test gives up (``HangGuard``).
    static let hangGuard: TimeInterval = HangGuard.seconds

    /// Waits until standard output matches `pattern` and returns the first match; nil when the
    /// child ended without printing it, or after `timeout` seconds (a hang guard).
    ///
    /// The output is looked at before the time is: a test task that the loaded machine let run
    /// again only after the guard had passed still finds a line the child printed in time.
    /// (It used to look at the clock first, and a 20 s deadline, counted while the test task was
    /// waiting for a thread, gave up on a line that was already there.)
    func waitForOutput(matching pattern: String, timeout: TimeInterval = RunningProcess.hangGuard) async throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if !child.isRunning {
                _ = await child.exitStatus()  // its output read to the end
                let text = stdout
                return text.range(of: pattern, options: .regularExpression).map { String(text[$0]) }
            }
            let text = stdout
            if let range = text.range(of: pattern, options: .regularExpression) {
                return String(text[range])
            }
            if Date() >= deadline { return nil }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    /// Sends `signal` and waits for the exit status; after `timeout` seconds (a hang guard) the
    /// child is killed and the answer is nil.
    func stop(with signalNumber: Int32 = SIGINT, timeout: TimeInterval = RunningProcess.hangGuard) async throws -> Int32? {
        child.send(signalNumber)
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning, Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        if child.isRunning {
            child.send(SIGKILL)
            return nil
        }
        return await child.exitStatus()
    }
}
