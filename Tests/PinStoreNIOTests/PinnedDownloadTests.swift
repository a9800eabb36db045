#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
@testable import PinStoreNIO
import PinStoreTestSupport
import Testing

/// `session.pinnedDownload(from:)`: the pinned stand-in for `download(from:)` on Linux, against
/// real TLS servers on 127.0.0.1. Serialized: the refusal test compares the temporary
/// directory's download files before and after, which another download running beside it
/// would change.
@Suite(.serialized) struct PinnedDownloadTests {
    func session(_ store: PinStore) throws -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        // Generous: a handshake on a machine loaded by a parallel build can take seconds.
        base.timeoutIntervalForRequest = 60
        return URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, basedOn: base))
    }

    /// The download files in the temporary directory now.
    static func downloadFiles() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)
            .filter { $0.hasPrefix("pinstore-download-") })
    }

    @Test func aPinnedServersBodyIsStreamedToAFileTheCallerOwns() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        // 12 MiB: three times what a streamed body may hold in memory before reading pauses, so
        // the pause and the resume both happen on the way.
        let (file, response) = try await session(try Pins.good()).pinnedDownload(from: URL(string: "https://localhost:\(server.port)/stream?mib=12")!)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let body = try Data(contentsOf: file)
        #expect(body.count == 12 << 20)
        // The server's stream is the bytes 0...255 over and over: every byte where it belongs.
        #expect(body.enumerated().allSatisfy { $0.element == UInt8($0.offset % 256) })
        let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    @Test func aRequestsHeadersAndMethodGoOutAsGiven() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        var request = URLRequest(url: URL(string: "https://localhost:\(server.port)/echo")!)
        request.httpMethod = "POST"
        request.httpBody = Data("to a file".utf8)
        let (file, _) = try await session(try Pins.good()).pinnedDownload(for: request)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == "POST to a file")
    }

    @Test func aRefusedServerFailsWithThePinningFailureAndLeavesNoFile() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let before = try Self.downloadFiles()
        let error = await #expect(throws: URLError.self) {
            _ = try await session(try Pins.good()).pinnedDownload(from: URL(string: "https://localhost:\(server.port)/stream?mib=1")!)
        }
        #expect(error?.code == .serverCertificateUntrusted)
        #expect(error.flatMap { PinningFailure(unwrapping: $0) }?.reason == .pinMismatch)
        #expect(try Self.downloadFiles() == before)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func anUnpinnedSessionIsRefusedRatherThanUsedUnpinned() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let before = try Self.downloadFiles()
        let error = await #expect(throws: URLError.self) {
            _ = try await URLSession(configuration: .ephemeral).pinnedDownload(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(error?.code == .unsupportedURL)
        #expect((error?.userInfo[NSLocalizedDescriptionKey] as? String)?.contains("not pinned") == true, "\(String(describing: error))")
        #expect(try Self.downloadFiles() == before)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    /// Another https protocol class ahead of the pinned one would carry the download unpinned.
    @Test func aSessionWhosePinnedProtocolIsNotFirstIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let configuration = URLSessionConfiguration.pinned(by: try Pins.good(), trustRoots: try Pins.anchors, basedOn: .ephemeral)
        configuration.protocolClasses = [OtherHTTPSProtocol.self] + (configuration.protocolClasses ?? [])
        let before = try Self.downloadFiles()
        let error = await #expect(throws: URLError.self) {
            _ = try await URLSession(configuration: configuration).pinnedDownload(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(error?.code == .unsupportedURL)
        #expect(try Self.downloadFiles() == before)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func theSystemsDownloadNamesThePinnedOneInItsError() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: URLError.self) {
            _ = try await session(try Pins.good()).download(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        #expect(error?.code == .unsupportedURL)
        #expect((error?.userInfo[NSLocalizedDescriptionKey] as? String)?.contains("pinnedDownload(from:)") == true, "\(String(describing: error))")
    }
}
/// An https protocol that is not PinStore's (a logging or stub protocol an app might add).
private final class OtherHTTPSProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { request.url?.scheme == "https" }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() { client?.urlProtocol(self, didFailWithError: URLError(.cancelled)) }
    override func stopLoading() {}
}
#endif
