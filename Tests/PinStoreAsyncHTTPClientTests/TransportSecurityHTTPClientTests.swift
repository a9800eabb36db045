import AsyncHTTPClient
import Foundation
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient
import Testing

/// ATS's transport minimums through a pinned `HTTPClient`: what its TLS configuration and the
/// leaf-only connection initializer can see, against real TLS servers on 127.0.0.1.
@Suite struct TransportSecurityHTTPClientTests {
    func requirement(_ failure: PinningFailure?) -> TransportSecurityRequirement? {
        if case .transportSecurityNotMet(let violation)? = failure?.reason { return violation.requirement }
        return nil
    }

    func start(_ chain: String, _ key: String, configure: (inout TLSConfiguration) -> Void = { _ in }) async throws -> LoopbackHTTPSServer {
        try await LoopbackHTTPSServer.start(chain: [chain], key: key, configure: configure)
    }

    static func tls11Only(_ tls: inout TLSConfiguration) {
        tls.minimumTLSVersion = .tlsv1
        tls.maximumTLSVersion = .tlsv11
    }

    @Test(arguments: [
        ("pki/localhost-sha1-chain.pem", "pki/localhost-sha1.key.pem", "pki/localhost-sha1.pem", TransportSecurityRequirement.certificateSignatureDigest),
        ("pki/localhost-rsa1024-chain.pem", "pki/localhost-rsa1024.key.pem", "pki/localhost-rsa1024.pem", .certificateKeySize),
    ])
    func weakLeafIsRefusedWithItsRequirement(chain: String, key: String, leaf: String, expected: TransportSecurityRequirement) async throws {
        let server = try await start(chain, key)
        let client = try Pins.client(try Pins.store([Pins.entry(leaf)]), updateOnEmpty: false, updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(requirement(failure) == expected)
        #expect(server.receivedBytes == 0)
    }

    @Test(arguments: [
        ("pki/localhost-sha1-chain.pem", "pki/localhost-sha1.key.pem", "pki/localhost-sha1.pem"),
        ("pki/localhost-rsa1024-chain.pem", "pki/localhost-rsa1024.key.pem", "pki/localhost-rsa1024.pem"),
    ])
    func weakLeafIsAllowedByTheForwardSecrecyException(chain: String, key: String, leaf: String) async throws {
        let server = try await start(chain, key)
        let store = try Pins.store([Pins.entry(leaf)], exceptions: [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)])
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        let (response, _) = try await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        #expect(response.status == .ok)
    }

    @Test func tls11OnlyServerIsRefusedByTheHandshake() async throws {
        let server = try await start("pki/localhost-chain.pem", "pki/localhost.key.pem", configure: Self.tls11Only)
        let client = try Pins.client(try Pins.store([Pins.entry("pki/localhost.pem")]), updateOnEmpty: false, updateOnMismatch: false)
        // AsyncHTTPClient surfaces swift-nio-ssl's own error: the initializer never runs.
        await #expect(throws: (any Error).self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(server.receivedBytes == 0)
    }

    @Test func tls11OnlyServerIsAllowedByItsException() async throws {
        let server = try await start("pki/localhost-chain.pem", "pki/localhost.key.pem", configure: Self.tls11Only)
        let store = try Pins.store([Pins.entry("pki/localhost.pem")],
                                   exceptions: [TransportSecurityException(domain: "localhost", minimumTLSVersion: .tlsv11)])
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        let (response, _) = try await Pins.get(client, server)
        try await client.shutdown()
        await server.shutdown()
        #expect(response.status == .ok)
    }

    @Test func tls11ConnectionForAHostWithoutTheExceptionIsRefusedByTheInitializer() async throws {
        // Another host's exception lowers the client's shared minimum to TLS 1.1; localhost keeps
        // TLS 1.2, checked on the negotiated version.
        let server = try await start("pki/localhost-chain.pem", "pki/localhost.key.pem", configure: Self.tls11Only)
        let store = try Pins.store([Pins.entry("pki/localhost.pem")],
                                   exceptions: [TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv11)])
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        let failure = await #expect(throws: PinningFailure.self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(requirement(failure) == .minimumTLSVersion)
        #expect(server.receivedBytes == 0)
    }

    @Test func rsaKeyExchangeOnlyServerIsRefusedEvenWithAnException() async throws {
        // The client's suites are shared by every host and the negotiated one is invisible:
        // forward secrecy stays required (README: what AsyncHTTPClient cannot check).
        let server = try await start("pki/localhost-rsa-chain.pem", "pki/localhost-rsa.key.pem") { tls in
            tls.maximumTLSVersion = .tlsv12
            tls.cipherSuiteValues = [.TLS_RSA_WITH_AES_128_GCM_SHA256]
        }
        let store = try Pins.store([Pins.entry("pki/localhost-rsa.pem")],
                                   exceptions: [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)])
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        await #expect(throws: (any Error).self) { try await Pins.get(client, server) }
        try await client.shutdown()
        await server.shutdown()
        #expect(server.receivedBytes == 0)
    }

    @Test func pinnedConfigurationOffersOnlyForwardSecretSuitesFromTLS12() throws {
        let configuration = try HTTPClient.Configuration.pinned(by: try Pins.store([Pins.entry("pki/localhost.pem")]), tlsConfiguration: Pins.tls())
        let tls = try #require(configuration.tlsConfiguration)
        #expect(tls.minimumTLSVersion == .tlsv12)
        #expect(!tls.cipherSuites.contains("TLS_RSA_WITH"))
        #expect(tls.cipherSuites.contains("ECDHE"))
    }
}
