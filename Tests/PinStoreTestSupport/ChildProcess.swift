import CPinStoreSpawn
import CPinStoreTestSupport
import Foundation
import PinStore

/// The outcome of one child process.
package struct ProcessOutput: Sendable {
    /// The exit status, or 128 + the signal that ended the child.
    package let status: Int32
    package let stdout: String
    package let stderr: String
}

/// A child process the tests start (`openssl`, `pinstore`, a crash-drill child), through
/// `posix_spawn` (CPinStoreSpawn says why not Foundation's `Process`).
///
/// Its standard output and error are read to their end on threads of their own, so a chatty
/// child never blocks on a full pipe, and its end is waited for on another: nothing here holds a
/// Swift concurrency thread (the machine has two).
package final class ChildProcess: Sendable {
    package struct StartError: Error, CustomStringConvertible {
        package let description: String
    }

    /// What happens to the child's standard output and error.
    package enum Output: Sendable {
        /// Collected, readable while the child runs (``stdout``, ``stderr``).
        case collect
        /// /dev/null.
        case discard
    }

    /// The child's process identifier.
    package let pid: pid_t
    private let output = Locked(Data())
    private let errors = Locked(Data())
    private let status = Locked<Int32?>(nil)
    private let ended = DispatchGroup()

    /// Starts `executable` with `arguments`; `input` is written to its standard input, which is
    /// then closed.
    package init(_ executable: String, _ arguments: [String], input: Data = Data(), output: Output = .collect) throws {
        // A child that exits without reading its input must not kill the test runner.
        signal(SIGPIPE, SIG_IGN)
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) }
        argv.append(nil)
        defer { argv.forEach { free($0) } }
        var stdinWrite: Int32 = -1, stdoutRead: Int32 = -1, stderrRead: Int32 = -1
        let pid = output == .collect
            ? CPinStoreSpawn_start(executable, &argv, -1, &stdinWrite, &stdoutRead, &stderrRead, 0)
            : CPinStoreSpawn_start(executable, &argv, -1, &stdinWrite, nil, nil, 0)
        guard pid > 0 else {
            let reason = String(cString: strerror(errno))
            throw StartError(description: "\(executable) could not be started: \(reason)")
        }
        self.pid = pid
        let collected = self.output, errors = self.errors, status = self.status
        let (input, inputWrite, outputRead, errorRead) = (input, stdinWrite, stdoutRead, stderrRead)
        Thread {
            if !input.isEmpty { Self.feed(input, to: inputWrite) }
            close(inputWrite)
        }.start()
        if output == .collect {
            for (descriptor, buffer) in [(outputRead, collected), (errorRead, errors)] {
                ended.enter()
                Thread { [ended] in
                    Self.drain(descriptor, into: buffer)
                    ended.leave()
                }.start()
            }
        }
        ended.enter()
        Thread { [ended] in
            var exitStatus: Int32 = -1, signalNumber: Int32 = -1
            // Seen ended, then reaped under the lock `send` takes: a signal never reaches a
            // reused pid.
            let code = CPinStoreSpawn_wait(pid, &exitStatus, &signalNumber, 0) != 0 ? -1 : signalNumber >= 0 ? 128 + signalNumber : exitStatus
            status.withLock {
                $0 = code
                CPinStoreSpawn_reap(pid)
            }
            ended.leave()
        }.start()
    }

    /// Whether the child has not ended yet.
    package var isRunning: Bool { status.withLock { $0 } == nil }

    /// What the child printed on standard output so far.
    package var stdout: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }
    /// What the child printed on standard error so far.
    package var stderr: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

    /// Sends `signal` to the child, unless it has ended.
    package func send(_ signalNumber: Int32) {
        status.withLock { if $0 == nil { kill(pid, signalNumber) } }
    }

    /// Blocks until the child has ended and its output is read; its status (exit code, or
    /// 128 + signal).
    package func waitUntilExit() -> Int32 {
        ended.wait()
        return status.withLock { $0 } ?? -1
    }

    /// Waits, without holding a Swift concurrency thread, until the child has ended and its
    /// output is read; its status.
    package func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            ended.notify(queue: .global()) { [status] in
                continuation.resume(returning: status.withLock { $0 } ?? -1)
            }
        }
    }

    /// Runs `executable` to its end and returns what it printed.
    package static func run(_ executable: String, _ arguments: [String], input: Data = Data()) async throws -> ProcessOutput {
        let child = try ChildProcess(executable, arguments, input: input)
        let status = await child.exitStatus()
        return ProcessOutput(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    /// Runs `executable` to its end, blocking the calling thread.
    package static func runBlocking(_ executable: String, _ arguments: [String], input: Data = Data()) throws -> ProcessOutput {
        let child = try ChildProcess(executable, arguments, input: input)
        let status = child.waitUntilExit()
        return ProcessOutput(status: status, stdout: child.stdout, stderr: child.stderr)
    }

    private static func feed(_ data: Data, to descriptor: Int32) {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return // the child closed its input
                }
                offset += written
            }
        }
    }

    private static func drain(_ descriptor: Int32, into buffer: Locked<Data>) {
        defer { close(descriptor) }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            buffer.withLock { $0.append(contentsOf: chunk[0..<count]) }
        }
    }
}

/// Whether this process may hold `count` open descriptors, raising its soft limit (up to the
/// hard one) when it is lower: 1,024 is a common default on Linux, 256 on macOS.
package func allowOpenDescriptors(_ count: Int) -> Bool {
    CPinStoreTestSupport_allowDescriptors(Int32(count)) == 1
}
