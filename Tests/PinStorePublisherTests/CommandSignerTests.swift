import Foundation
import PinStore
import PinStoreSigning
import PinStoreTestSupport
import Testing
@testable import PinStorePublisher

/// The signing command (an HSM or KMS behind a program): every way it can fail is a typed
/// error, it is killed when it runs too long, and it sees nothing of this process but its input.
struct CommandSignerTests {
    @Test func aCommandPrintingGarbageIsATypedError() async throws {
        let key = try P256PrivateKey()
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "cat >/dev/null; echo not-a-signature"], publicKey: try key.publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        #expect(error?.code == .signingFailed)
    }

    @Test func aCommandSignatureIsCheckedAgainstItsKey() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("signer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = try P256PrivateKey(), other = try P256PrivateKey()
        let keyFile = folder.appendingPathComponent("k.pem")
        try key.pkcs8PEM().write(to: keyFile, atomically: true, encoding: .utf8)
        let command = ["/bin/sh", "-c", "openssl dgst -sha256 -sign \(keyFile.path) | base64 -w0"]
        let good = CommandSigner(arguments: command, publicKey: try key.publicKey, timeout: 30)
        let signature = try await good.sign(Data("hello".utf8))
        #expect(try key.publicKey.isValidSignature(signature, for: Data("hello".utf8)))
        let wrongKey = CommandSigner(arguments: command, publicKey: try other.publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await wrongKey.sign(Data("hello".utf8)) }
        #expect(error?.code == .signingFailed)
    }

    @Test func aCommandThatRunsPastItsTimeoutIsKilledAndRefused() async throws {
        let directory = try TestResources.temporaryDirectory(); defer { try? FileManager.default.removeItem(at: directory) }
        let pidFile = directory.appendingPathComponent("pid")
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "echo $$ > \(pidFile.path); exec sleep 60"],
                                   publicKey: try P256PrivateKey().publicKey, timeout: 0.5)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        #expect(error?.code == .signingFailed)
        #expect(error?.reason.contains("did not finish within") == true, "\(String(describing: error))")
        let pid = try #require(Int32(try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed and waited for: the process no longer exists.
        #expect(kill(pid, 0) != 0)
    }

    @Test func aCommandEndedByASignalIsRefusedNamingTheSignal() async throws {
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "kill -9 $$"], publicKey: try P256PrivateKey().publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        #expect(error?.code == .signingFailed)
        #expect(error?.reason.contains("was killed by signal 9") == true, "\(String(describing: error))")
    }

    @Test func aCommandExitingNonZeroIsRefusedWithItsStatusAndMessage() async throws {
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "echo the HSM is locked >&2; exit 3"], publicKey: try P256PrivateKey().publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        #expect(error?.code == .signingFailed)
        #expect(error?.reason.contains("exited with status 3: the HSM is locked") == true, "\(String(describing: error))")
    }

    @Test func aMissingProgramIsATypedError() async throws {
        let signer = CommandSigner(arguments: ["/nonexistent/pinstore-signer"], publicKey: try P256PrivateKey().publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        #expect(error?.code == .signingFailed)
        #expect(error?.reason.contains("could not be started") == true, "\(String(describing: error))")
    }

    /// A descriptor opened without close-on-exec (a key file, a socket of a library that forgot
    /// the flag) must not reach the command.
    @Test func theCommandInheritsNoDescriptorOfOurs() async throws {
        try #require(FileManager.default.fileExists(atPath: "/proc/self/fd"), "needs /proc (Linux)")
        let descriptor = open("/dev/null", O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "ls /proc/self/fd/ >&2; exit 1"], publicKey: try P256PrivateKey().publicKey, timeout: 30)
        let error = await #expect(throws: PublisherError.self) { _ = try await signer.sign(Data("x".utf8)) }
        let listed = try #require(error?.reason.components(separatedBy: "status 1: ").last)
        let descriptors = Set(listed.split(whereSeparator: { !$0.isNumber }).compactMap { Int32($0) })
        // 0, 1 and 2, and the descriptor ls reads the folder through.
        #expect(descriptors.count >= 3 && descriptors.count <= 4, "\(descriptors)")
        #expect(!descriptors.contains(descriptor), "the command inherited descriptor \(descriptor): \(descriptors)")
    }

    /// Foundation's `Process.run()` read past a buffer with this many descriptors open
    /// (swift-corelibs-foundation#5472; AddressSanitizer, run in CI, reports it every time).
    @Test func aSignatureIsMadeWithThousandsOfDescriptorsOpen() async throws {
        let directory = try TestResources.temporaryDirectory(); defer { try? FileManager.default.removeItem(at: directory) }
        let key = try P256PrivateKey()
        let keyFile = directory.appendingPathComponent("k.pem")
        try key.pkcs8PEM().write(to: keyFile, atomically: true, encoding: .utf8)
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        for _ in 0..<2_000 {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0)
            descriptors.append(descriptor)
        }
        let signer = CommandSigner(arguments: ["/bin/sh", "-c", "openssl dgst -sha256 -sign \(keyFile.path) | base64 -w0"],
                                   publicKey: try key.publicKey, timeout: 30)
        let signature = try await signer.sign(Data("hello".utf8))
        #expect(try key.publicKey.isValidSignature(signature, for: Data("hello".utf8)))
    }
}
