#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import NIOCore
import NIOSSL
import PinStore
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// The servers of the ATS transport-minimum tests, on 127.0.0.1: each falls short of one minimum
/// while presenting a chain the normal trust evaluation accepts and the store pins.
enum WeakServer: String, CaseIterable, Sendable {
    /// Speaks only TLS 1.1 (and 1.0).
    case tls11Only
    /// TLS 1.2 with only TLS_RSA_WITH_AES_128_GCM_SHA256 (RSA key exchange, no forward secrecy).
    case rsaKeyExchangeOnly
    /// A leaf signed with ECDSA-SHA1.
    case sha1SignedLeaf
    /// A leaf with an RSA-1024 key.
    case rsa1024Leaf

    var leaf: String {
        switch self {
        case .tls11Only: "pki/localhost.pem"
        case .rsaKeyExchangeOnly: "pki/localhost-rsa.pem"
        case .sha1SignedLeaf: "pki/localhost-sha1.pem"
        case .rsa1024Leaf: "pki/localhost-rsa1024.pem"
        }
    }

    var chain: String { leaf.replacingOccurrences(of: ".pem", with: "-chain.pem") }
    var key: String { leaf.replacingOccurrences(of: ".pem", with: ".key.pem") }

    /// The requirement the server fails.
    var requirement: TransportSecurityRequirement {
        switch self {
        case .tls11Only: .minimumTLSVersion
        case .rsaKeyExchangeOnly: .forwardSecrecy
        case .sha1SignedLeaf: .certificateSignatureDigest
        case .rsa1024Leaf: .certificateKeySize
        }
    }

    /// The ATS exception that admits the server.
    var exception: TransportSecurityException {
        switch self {
        case .tls11Only: TransportSecurityException(domain: "localhost", minimumTLSVersion: .tlsv11)
        default: TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)
        }
    }

    func configure(_ tls: inout TLSConfiguration) {
        switch self {
        case .tls11Only:
            tls.minimumTLSVersion = .tlsv1
            tls.maximumTLSVersion = .tlsv11
        case .rsaKeyExchangeOnly:
            tls.maximumTLSVersion = .tlsv12
            tls.cipherSuiteValues = [.TLS_RSA_WITH_AES_128_GCM_SHA256]
        case .sha1SignedLeaf, .rsa1024Leaf:
            break
        }
    }

    func start() async throws -> TestServer {
        try await TestServer.tls(chain: [chain], key: key, configure: configure)
    }

    /// A store pinning the server's leaf, with the server's exception when `excepted`.
    func store(excepted: Bool) throws -> PinStore {
        try Pins.pinning(leaf, exceptions: excepted ? [exception] : [])
    }
}

/// ATS's transport minimums through `PinningTLSVerifier` with a raw NIO client.
@Suite struct TransportSecurityVerifierTests {
    func verifier(_ store: PinStore) throws -> PinningTLSVerifier {
        PinningTLSVerifier(store: store, trustRoots: try Pins.anchors, updateOnEmpty: false, updateOnMismatch: false)
    }

    @Test(arguments: WeakServer.allCases)
    func serverBelowAMinimumIsRefusedWithThatRequirement(_ weak: WeakServer) async throws {
        let server = try await weak.start()
        defer { Task { await server.shutdown() } }
        let verifier = try verifier(try weak.store(excepted: false))
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: verifier)
        guard case .failure(let error) = outcome.result else {
            Issue.record("expected a refused handshake, got \(outcome.result)")
            return
        }
        // Certificate minimums come from the decision; handshake ones from the mapped TLS error.
        let failure = outcome.decision?.failure ?? verifier.transportSecurityFailure(for: error, serverHostname: "localhost")
        guard let violation = failure?.reason.transportSecurityViolation else {
            Issue.record("expected transportSecurityNotMet, got \(String(describing: failure)) after \(error)")
            return
        }
        #expect(violation.requirement == weak.requirement)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test(arguments: WeakServer.allCases)
    func serverBelowAMinimumIsAllowedByItsException(_ weak: WeakServer) async throws {
        let server = try await weak.start()
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try weak.store(excepted: true)))
        #expect(try outcome.result.get().status == 200)
    }

    @Test func tls11ExceptionForAnotherDomainLeavesLocalhostAtTheDefault() async throws {
        let server = try await WeakServer.tls11Only.start()
        defer { Task { await server.shutdown() } }
        let store = try Pins.pinning(WeakServer.tls11Only.leaf,
                                     exceptions: [TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv10)])
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(store))
        #expect(throws: (any Error).self) { try outcome.result.get() }
    }

    @Test func callerContextAllowingTLS10StillGetsTheTLS12Minimum() async throws {
        // The caller's own context allows TLS 1.0 and RSA key exchange: the handler raises both.
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv1
        let context = try NIOSSLContext(configuration: tls)
        let server = try await WeakServer.tls11Only.start()
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try WeakServer.tls11Only.store(excepted: false)),
                                                 context: context)
        #expect(throws: (any Error).self) { try outcome.result.get() }
    }

    @Test func clientConfigurationCarriesTheMinimumsForTheHost() throws {
        let verifier = try verifier(try WeakServer.tls11Only.store(excepted: true))
        let strict = try verifier.clientConfiguration(for: "api.example.com")
        #expect(strict.minimumTLSVersion == .tlsv12)
        #expect(!strict.cipherSuites.contains("TLS_RSA_WITH"))
        let relaxed = try verifier.clientConfiguration(for: "localhost")
        #expect(relaxed.minimumTLSVersion == .tlsv11)
    }

    @Test func maximumVersionBelowTheMinimumIsASetupError() throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.maximumTLSVersion = .tlsv11
        let verifier = try verifier(try Pins.good())
        #expect(throws: PinningTLSSetupError.self) { _ = try verifier.clientConfiguration(for: "localhost", base: tls) }
    }
}

#if canImport(FoundationNetworking)
/// ATS's transport minimums through the pinned URLSession (its connection pool).
@Suite struct TransportSecurityURLSessionTests {
    func session(_ store: PinStore) throws -> URLSession {
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        return URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors, updateOnEmpty: false, basedOn: base))
    }

    @Test(arguments: WeakServer.allCases)
    func serverBelowAMinimumIsRefusedWithThatRequirement(_ weak: WeakServer) async throws {
        let server = try await weak.start()
        defer { Task { await server.shutdown() } }
        do {
            let (_, response) = try await session(try weak.store(excepted: false)).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
            Issue.record("expected a refusal, got \(response)")
        } catch let error as URLError {
            let failure = error.userInfo[NSUnderlyingErrorKey] as? PinningFailure
            guard let violation = failure?.reason.transportSecurityViolation else {
                Issue.record("expected transportSecurityNotMet, got \(error)")
                return
            }
            #expect(violation.requirement == weak.requirement)
            let handshake = weak.requirement == .minimumTLSVersion || weak.requirement == .forwardSecrecy
            #expect(error.code == (handshake ? .secureConnectionFailed : .serverCertificateUntrusted))
        }
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test(arguments: WeakServer.allCases)
    func serverBelowAMinimumIsAllowedByItsException(_ weak: WeakServer) async throws {
        let server = try await weak.start()
        defer { Task { await server.shutdown() } }
        let (data, response) = try await session(try weak.store(excepted: true)).data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "hello over a pinned connection")
    }
}
#endif
