import CPinStoreSpawn
import Foundation
import PinStore

/// Signs by running a command, so that the key can live in an HSM or a KMS and never in this
/// process: the command gets the bytes to sign on its standard input and must print the
/// signature on its standard output, as **Base64 of the DER ECDSA-SHA256 signature** (one line;
/// surrounding whitespace is ignored), or as the raw DER bytes. `openssl` itself is such a
/// command:
///
/// ```json
/// {"command": ["/bin/sh", "-c", "openssl dgst -sha256 -sign key.pem | base64 -w0"], "publicKey": "key.pub.pem"}
/// ```
///
/// Every signature is checked against ``publicKey`` before it is used: a command that exits
/// non-zero, prints garbage, signs with another key, or runs past ``timeout`` (then it is
/// killed) is a ``PublisherError/Code/signingFailed`` error, and nothing is published with it.
package struct CommandSigner: ListSigner {
    /// argv: the program (an absolute path, or a name looked up in `PATH`) and its arguments.
    package let arguments: [String]
    package let publicKey: P256PublicKey
    /// Longest a signature may take.
    package let timeout: TimeInterval

    /// Most output read from the command: a DER P-256 signature is at most 72 bytes.
    static let maximumOutput = 4_096

    package init(arguments: [String], publicKey: P256PublicKey, timeout: TimeInterval) {
        self.arguments = arguments
        self.publicKey = publicKey
        self.timeout = timeout
    }

    package func sign(_ message: Data) async throws(PublisherError) -> Data {
        let output = try await run(input: message)
        guard let signature = Self.signature(in: output) else {
            let shown = String(decoding: output.prefix(60), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw PublisherError(.signingFailed, "The signing command \(arguments[0]) printed \(output.count) bytes that are neither Base64 DER nor DER (\(String(reflecting: shown))); it must print the ECDSA signature of its standard input.")
        }
        guard publicKey.isValidSignature(signature, for: message) else {
            throw PublisherError(.signingFailed, "The signing command \(arguments[0])'s signature does not verify with its configured public key (key ID \(keyID.prefix(16))); does it sign with another key, or sign something other than its standard input?")
        }
        return signature
    }

    /// Base64 text of a DER signature, or DER itself; nil for anything else.
    static func signature(in output: Data) -> Data? {
        let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !text.isEmpty, let decoded = Data(base64Encoded: text), decoded.first == 0x30 { return decoded }
        if output.first == 0x30, output.count >= 8, output.count <= 72 { return output }
        return nil
    }

    /// Runs the command with `input` on stdin; its stdout, or a typed error.
    private func run(input: Data) async throws(PublisherError) -> Data {
        let program = arguments[0]
        // A name without a slash is looked up in PATH by env, as a shell would.
        let argv = program.contains("/") ? arguments : ["/usr/bin/env"] + arguments
        // The input is a file, not a pipe: a command that exits without reading a pipe would
        // make our write raise SIGPIPE and kill this whole process. The bytes are the list
        // being signed (public); the file is private to this process and gone at the end.
        let inputFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-sign-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: inputFile.path, contents: input, attributes: [.posixPermissions: 0o600]),
              let childInput = try? FileHandle(forReadingFrom: inputFile) else {
            throw PublisherError(.signingFailed, "The signing command's input could not be written to \(inputFile.path).")
        }
        defer {
            try? childInput.close()
            try? FileManager.default.removeItem(at: inputFile)
        }
        // posix_spawn, not Foundation's Process: CPinStoreSpawn says why.
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var stdout: Int32 = -1, stderr: Int32 = -1
        let pid = CPinStoreSpawn_start(argv[0], &cArguments, childInput.fileDescriptor, nil, &stdout, &stderr)
        guard pid > 0 else {
            throw PublisherError(.signingFailed, "The signing command \(program) could not be started: \(String(cString: strerror(errno))).")
        }
        let finished = ProcessEnd()
        Thread {
            var exitStatus: Int32 = -1, signalNumber: Int32 = -1
            _ = CPinStoreSpawn_wait(pid, &exitStatus, &signalNumber)
            finished.signal(exitStatus: exitStatus, signalNumber: signalNumber)
        }.start()
        // Reading on threads of their own: a command that prints a lot must not block on a full
        // pipe while we wait for its end.
        let collected = OutputCollector(limit: Self.maximumOutput)
        let errors = OutputCollector(limit: Self.maximumOutput)
        for (descriptor, collector) in [(stdout, collected), (stderr, errors)] {
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            Thread { collector.drain(handle) }.start()
        }
        guard let end = await finished.wait(timeout: timeout) else {
            kill(pid, SIGKILL)
            _ = await finished.wait(timeout: 10)
            throw PublisherError(.signingFailed, "The signing command \(program) did not finish within \(Int(timeout)) seconds and was killed; is the HSM or KMS reachable?")
        }
        let output = await collected.result()
        guard end.exitStatus == 0 else {
            let message = String(decoding: (await errors.result()).prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let how = end.signalNumber >= 0 ? "was killed by signal \(end.signalNumber)" : "exited with status \(end.exitStatus)"
            throw PublisherError(.signingFailed, "The signing command \(program) \(how)\(message.isEmpty ? "" : ": \(message)"); nothing was signed.")
        }
        return output
    }
}

/// The end of a child process, awaited with a time limit.
private final class ProcessEnd: @unchecked Sendable {
    /// How the child ended: its exit status, or the signal that ended it (the other is -1;
    /// both are -1 when it could not be waited for).
    struct End: Sendable {
        let exitStatus: Int32
        let signalNumber: Int32
    }

    private let lock = NSLock()
    private var end: End?
    private var waiters: [UInt64: CheckedContinuation<End?, Never>] = [:]
    private var nextWaiter: UInt64 = 0

    func signal(exitStatus: Int32, signalNumber: Int32) {
        let end = End(exitStatus: exitStatus, signalNumber: signalNumber)
        lock.lock()
        self.end = end
        let resumed = waiters.values
        waiters = [:]
        lock.unlock()
        resumed.forEach { $0.resume(returning: end) }
    }

    /// How the process ended, or nil when `timeout` passed first.
    func wait(timeout: TimeInterval) async -> End? {
        await withCheckedContinuation { (continuation: CheckedContinuation<End?, Never>) in
            lock.lock()
            if let end {
                lock.unlock()
                continuation.resume(returning: end)
                return
            }
            let id = nextWaiter
            nextWaiter += 1
            waiters[id] = continuation
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                // Each continuation is resumed exactly once: by whichever of the end and the
                // deadline takes it out of the table first.
                lock.lock()
                let expired = waiters.removeValue(forKey: id)
                lock.unlock()
                expired?.resume(returning: nil)
            }
        }
    }
}

/// Reads a pipe to its end, keeping at most `limit` bytes.
private final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private let limit: Int
    private var data = Data()
    private var done = false
    private var waiters: [CheckedContinuation<Data, Never>] = []

    init(limit: Int) { self.limit = limit }

    func drain(_ handle: FileHandle) {
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            lock.lock()
            if data.count < limit { data.append(chunk.prefix(limit - data.count)) }
            lock.unlock()
        }
        lock.lock()
        done = true
        let resumed = waiters
        waiters = []
        let result = data
        lock.unlock()
        resumed.forEach { $0.resume(returning: result) }
    }

    func result() async -> Data {
        await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
            lock.lock()
            if done {
                let result = data
                lock.unlock()
                continuation.resume(returning: result)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}
