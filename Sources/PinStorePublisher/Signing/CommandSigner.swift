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
/// non-zero, prints garbage, signs with another key, or runs past ``timeout`` (then it and every
/// process it started are killed) is a ``PublisherError/Code/signingFailed`` error, and nothing
/// is published with it.
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
        let childInput = try Self.inputFile(holding: input)
        defer { try? childInput.close() }
        // posix_spawn, not Foundation's Process: CPinStoreSpawn says why. The command leads a
        // process group of its own, so a timeout kills what it started too (`sh -c "a | b"`).
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var stdout: Int32 = -1, stderr: Int32 = -1
        let pid = CPinStoreSpawn_start(argv[0], &cArguments, childInput.fileDescriptor, nil, &stdout, &stderr, 1)
        guard pid > 0 else {
            let reason = String(cString: strerror(errno))
            throw PublisherError(.signingFailed, "The signing command \(program) could not be started: \(reason).")
        }
        let deadline = DispatchTime.now() + timeout
        let end = Eventual<ProcessEnd>()
        Thread {
            // Seen ended but not reaped until `end` holds it: while `end` is pending, the pid
            // (and its group) cannot be reused, so the kill below never hits another process.
            var exitStatus: Int32 = -1, signalNumber: Int32 = -1
            _ = CPinStoreSpawn_wait(pid, &exitStatus, &signalNumber, 0)
            end.fulfil(ProcessEnd(exitStatus: exitStatus, signalNumber: signalNumber)) { CPinStoreSpawn_reap(pid) }
        }.start()
        // Read on threads of their own, so a command that prints a lot never blocks on a full
        // pipe while we wait for its end.
        let output = Self.collect(stdout), errors = Self.collect(stderr)
        guard let ended = await end.wait(until: deadline) else {
            end.whilePending { _ = kill(-pid, SIGKILL) }
            _ = await end.wait(until: .now() + 10)
            throw PublisherError(.signingFailed, "The signing command \(program) did not finish within \(Int(timeout)) seconds and was killed; is the HSM or KMS reachable?")
        }
        guard let printed = await output.wait(until: deadline), let message = await errors.wait(until: deadline) else {
            // It ended, but something it started still holds its output open.
            kill(-pid, SIGKILL)
            throw PublisherError(.signingFailed, "The signing command \(program) ended, but what it started kept its output open past \(Int(timeout)) seconds and was killed; nothing was signed.")
        }
        guard ended.exitStatus == 0 else {
            let shown = String(decoding: message.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let how = ended.signalNumber >= 0 ? "was killed by signal \(ended.signalNumber)" : "exited with status \(ended.exitStatus)"
            throw PublisherError(.signingFailed, "The signing command \(program) \(how)\(shown.isEmpty ? "" : ": \(shown)"); nothing was signed.")
        }
        return printed
    }

    /// The command's standard input: a file, not a pipe (a command that exits without reading a
    /// pipe would make our write raise SIGPIPE and kill this whole process). The bytes are the
    /// list being signed (public); the file is private to this process and unlinked at once, so
    /// nothing is left behind whatever happens next.
    private static func inputFile(holding input: Data) throws(PublisherError) -> FileHandle {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-sign-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: file.path, contents: input, attributes: [.posixPermissions: 0o600]) else {
            throw PublisherError(.signingFailed, "The signing command's input could not be written to \(file.path).")
        }
        defer { try? FileManager.default.removeItem(at: file) }
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw PublisherError(.signingFailed, "The signing command's input could not be read back from \(file.path).")
        }
        return handle
    }

    /// Reads `descriptor` to its end on a thread of its own, keeping at most
    /// ``maximumOutput`` bytes, then closes it.
    private static func collect(_ descriptor: Int32) -> Eventual<Data> {
        let collected = Eventual<Data>()
        Thread {
            var kept = Data()
            var chunk = [UInt8](repeating: 0, count: 4_096)
            while true {
                // read(2), not FileHandle.availableData, which traps on a read error.
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                if kept.count < maximumOutput { kept.append(contentsOf: chunk[0..<min(count, maximumOutput - kept.count)]) }
            }
            close(descriptor)
            collected.fulfil(kept)
        }.start()
        return collected
    }
}

/// How a child process ended: its exit status, or the signal that ended it (the other is -1;
/// both are -1 when it could not be waited for).
private struct ProcessEnd: Sendable {
    let exitStatus: Int32
    let signalNumber: Int32
}

/// A value that arrives once, from another thread, awaited with a deadline.
private final class Eventual<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock`.
    private let lock = NSLock()
    private var value: Value?
    private var waiters: [UInt64: CheckedContinuation<Value?, Never>] = [:]
    private var nextWaiter: UInt64 = 0

    /// Sets the value (once), runs `andThen` while still holding the lock, and wakes every waiter.
    func fulfil(_ value: Value, andThen: () -> Void = {}) {
        lock.lock()
        self.value = value
        andThen()
        let resumed = waiters.values
        waiters = [:]
        lock.unlock()
        resumed.forEach { $0.resume(returning: value) }
    }

    /// Runs `body` under the lock if the value has not arrived yet.
    func whilePending(_ body: () -> Void) {
        lock.lock()
        if value == nil { body() }
        lock.unlock()
    }

    /// The value, or nil when `deadline` passes first.
    func wait(until deadline: DispatchTime) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            lock.lock()
            if let value {
                lock.unlock()
                continuation.resume(returning: value)
                return
            }
            let id = nextWaiter
            nextWaiter += 1
            waiters[id] = continuation
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: deadline) { [self] in
                // Each continuation is resumed exactly once: by whichever of the value and the
                // deadline takes it out of the table first.
                lock.lock()
                let expired = waiters.removeValue(forKey: id)
                lock.unlock()
                expired?.resume(returning: nil)
            }
        }
    }
}
