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
        let childInput = try Self.inputFile(holding: input)
        defer { try? childInput.close() }
        let ended: CommandRunner.Outcome
        do {
            ended = try await CommandRunner.run(arguments, input: childInput.fileDescriptor, timeout: timeout, maximumOutput: Self.maximumOutput)
        } catch {
            switch error {
            case .notStarted(let reason):
                throw PublisherError(.signingFailed, "The signing command \(program) could not be started: \(reason).")
            case .timedOut:
                throw PublisherError(.signingFailed, "The signing command \(program) did not finish within \(Int(timeout)) seconds and was killed; is the HSM or KMS reachable?")
            case .outputHeldOpen:
                throw PublisherError(.signingFailed, "The signing command \(program) ended, but what it started kept its output open past \(Int(timeout)) seconds and was killed; nothing was signed.")
            case .cancelled:
                throw PublisherError(.signingFailed, "The signing command \(program) was killed: the publisher is stopping; nothing was signed.")
            }
        }
        guard ended.exitStatus == 0 else {
            throw PublisherError(.signingFailed, "The signing command \(program) \(ended.describedEnd); nothing was signed.")
        }
        return ended.output
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
}
