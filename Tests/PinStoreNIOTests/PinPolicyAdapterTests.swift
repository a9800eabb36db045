import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PinStore
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// Static pin policies (an SPKI policy and a CA policy) enforced by the NIO verifier and the
/// pinned URLSession, against real TLS servers on 127.0.0.1.
@Suite struct PinPolicyAdapterTests {
    static func spki(_ certificate: String) throws -> String { try TestResources.certificate("pki/\(certificate).pem").spkiSHA256Base64 }
    static let backup = Data(repeating: 0xB0, count: 32).base64EncodedString()

    /// A store whose only pins are one static policy for localhost.
    static func store(_ pin: PinIdentity) throws -> PinStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-nio-policies-\(UUID().uuidString)")
        return try PinStore(configuration: .init(
            serviceURL: URL(string: "http://127.0.0.1:1/unused")!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            storageDirectory: directory,
            requestTimeout: HangGuard.seconds,
            policies: [PinPolicy(domain: "localhost", pins: [pin, .leafKey(spkiSHA256Base64: backup)])]))
    }

    static func leafKeyPolicy() throws -> PinStore { try store(.leafKey(spkiSHA256Base64: spki("localhost"))) }
    static func caKeyPolicy() throws -> PinStore { try store(.caKey(spkiSHA256Base64: spki("intermediate-ca"))) }

    static func server(_ name: String, key: String? = nil) async throws -> TestServer {
        try await TestServer.tls(chain: ["pki/\(name)-chain.pem"], key: "pki/\(key ?? name).key.pem")
    }

    // MARK: - PinningTLSVerifier

    func nioDecision(_ store: PinStore, _ server: TestServer) async throws -> PinningDecision? {
        let verifier = PinningTLSVerifier(store: store, trustRoots: try Pins.anchors, updateOnEmpty: false, updateOnMismatch: false)
        return try await RawNIOClient.get("/hello", port: server.port, verifier: verifier).decision
    }

    @Test func nioAcceptsARenewedLeafByItsKey() async throws {
        let server = try await Self.server("localhost-renewed")
        defer { Task { await server.shutdown() } }
        #expect(try await nioDecision(try Self.leafKeyPolicy(), server)?.isAllowed == true)
    }

    @Test func nioRefusesAnotherLeafKey() async throws {
        let server = try await Self.server("attacker")
        defer { Task { await server.shutdown() } }
        let decision = try await nioDecision(try Self.leafKeyPolicy(), server)
        #expect(decision?.failure?.reason == .pinMismatch)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func nioAcceptsALeafUnderThePinnedCA() async throws {
        let server = try await Self.server("localhost")
        defer { Task { await server.shutdown() } }
        #expect(try await nioDecision(try Self.caKeyPolicy(), server)?.isAllowed == true)
    }

    @Test func nioRefusesALeafUnderAnotherCA() async throws {
        let server = try await Self.server("localhost-other-ca")
        defer { Task { await server.shutdown() } }
        let decision = try await nioDecision(try Self.caKeyPolicy(), server)
        #expect(decision?.failure?.reason == .pinMismatch)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    // MARK: - URLSession on Linux

    #if canImport(FoundationNetworking)
    func urlSessionOutcome(_ store: PinStore, _ server: TestServer) async throws -> Result<Int, URLError> {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        // No list download after a refusal: these tests are about the policies alone (a
        // download to the unused list URL raced the request timeout under a sanitizer).
        let session = URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false,
                                                        updateOnMismatch: false, basedOn: base))
        do {
            let (_, response) = try await session.data(from: URL(string: "https://localhost:\(server.port)/hello")!)
            return .success((response as? HTTPURLResponse)?.statusCode ?? -1)
        } catch let error as URLError {
            return .failure(error)
        }
    }

    static func failure(_ outcome: Result<Int, URLError>) -> PinningFailure? {
        guard case .failure(let error) = outcome else { return nil }
        return PinningFailure(unwrapping: error)   // the real pinned URLSession's URLError
    }

    @Test func urlSessionAcceptsARenewedLeafByItsKey() async throws {
        let server = try await Self.server("localhost-renewed")
        defer { Task { await server.shutdown() } }
        #expect(try await urlSessionOutcome(try Self.leafKeyPolicy(), server) == .success(200))
    }

    @Test func urlSessionRefusesAnotherLeafKey() async throws {
        let server = try await Self.server("attacker")
        defer { Task { await server.shutdown() } }
        #expect(Self.failure(try await urlSessionOutcome(try Self.leafKeyPolicy(), server))?.reason == .pinMismatch)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }

    @Test func urlSessionAcceptsALeafUnderThePinnedCA() async throws {
        let server = try await Self.server("localhost")
        defer { Task { await server.shutdown() } }
        #expect(try await urlSessionOutcome(try Self.caKeyPolicy(), server) == .success(200))
    }

    @Test func urlSessionRefusesALeafUnderAnotherCA() async throws {
        let server = try await Self.server("localhost-other-ca")
        defer { Task { await server.shutdown() } }
        #expect(Self.failure(try await urlSessionOutcome(try Self.caKeyPolicy(), server))?.reason == .pinMismatch)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }
    #endif
}
