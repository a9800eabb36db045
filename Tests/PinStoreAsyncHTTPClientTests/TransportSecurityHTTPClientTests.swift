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
        if let violation = failure?.reason.transportSecurityViolation { return violation.requirement }
        return nil
    }

    /// One GET through a client for `store`; the client is shut down whatever happens.
    func get(_ store: PinStore, _ server: LoopbackHTTPSServer) async throws -> Result<HTTPClientResponse, any Error> {
        let client = try Pins.client(store, updateOnEmpty: false, updateOnMismatch: false)
        let result: Result<HTTPClientResponse, any Error>
        do {
            result = .success(try await Pins.get(client, server).0)
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        await server.shutdown()
        return result
    }

    func failure(_ result: Result<HTTPClientResponse, any Error>) -> PinningFailure? {
        guard case .failure(let error) = result else {
            Issue.record("expected a refusal, got a response")
            return nil
        }
        return error as? PinningFailure
    }

    func start(_ chain: String, _ key: String, configure: (inout TLSConfiguration) -> Void = { _ in }) async throws -> LoopbackHTTPSServer {
        try await LoopbackHTTPSServer.start(chain: [chain], key: key, configure: configure)
    }

    static func tls11Only(_ tls: inout TLSConfiguration) {
        tls.minimumTLSVersion = .tlsv1
        tls.maximumTLSVersion = .tlsv11
    }

    @Test(arguments: [
        ("pki/localhost-sha1-dnsonly-chain.pem", "pki/localhost-sha1-dnsonly.key.pem", "pki/localhost-sha1-dnsonly.pem", TransportSecurityRequirement.certificateSignatureDigest),
        ("pki/localhost-rsa1024-dnsonly-chain.pem", "pki/localhost-rsa1024-dnsonly.key.pem", "pki/localhost-rsa1024-dnsonly.pem", .certificateKeySize),
    ])
    func weakLeafIsRefusedWithItsRequirement(chain: String, key: String, leaf: String, expected: TransportSecurityRequirement) async throws {
        let server = try await start(chain, key)
        let result = try await get(try Pins.store([Pins.entry(leaf)]), server)
        #expect(requirement(failure(result)) == expected)
        #expect(server.receivedBytes == 0)
    }

    @Test(arguments: [
        ("pki/localhost-sha1-dnsonly-chain.pem", "pki/localhost-sha1-dnsonly.key.pem", "pki/localhost-sha1-dnsonly.pem"),
        ("pki/localhost-rsa1024-dnsonly-chain.pem", "pki/localhost-rsa1024-dnsonly.key.pem", "pki/localhost-rsa1024-dnsonly.pem"),
    ])
    func weakLeafIsAllowedByTheForwardSecrecyException(chain: String, key: String, leaf: String) async throws {
        let server = try await start(chain, key)
        let store = try Pins.store([Pins.entry(leaf)], exceptions: [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)])
        #expect(try await get(store, server).get().status == .ok)
    }

    @Test func exceptionForOnlyOneOfTheLeafsNamesIsNotApplied() async throws {
        // The leaf is valid for localhost and alt.pinstore.test, both pinned to it: AsyncHTTPClient
        // cannot tell which one a connection is for, so an exception applies only when both have it.
        let server = try await start("pki/localhost-rsa1024-two-names-chain.pem", "pki/localhost-rsa1024-two-names.key.pem")
        let store = try Pins.store([Pins.entry("pki/localhost-rsa1024-two-names.pem"),
                                    Pins.entry("pki/localhost-rsa1024-two-names.pem", name: "alt.pinstore.test")],
                                   exceptions: [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)])
        #expect(requirement(failure(try await get(store, server))) == .certificateKeySize)
    }

    @Test func tls11OnlyServerIsRefusedByTheHandshake() async throws {
        let server = try await start("pki/localhost-dnsonly-chain.pem", "pki/localhost-dnsonly.key.pem", configure: Self.tls11Only)
        // AsyncHTTPClient surfaces swift-nio-ssl's own error: the initializer never runs.
        let result = try await get(try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]), server)
        #expect(throws: (any Error).self) { try result.get() }
        #expect(server.receivedBytes == 0)
    }

    @Test func tls11OnlyServerIsAllowedByItsException() async throws {
        let server = try await start("pki/localhost-dnsonly-chain.pem", "pki/localhost-dnsonly.key.pem", configure: Self.tls11Only)
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")],
                                   exceptions: [TransportSecurityException(domain: "localhost", minimumTLSVersion: .tlsv11)])
        #expect(try await get(store, server).get().status == .ok)
    }

    @Test func tls11ConnectionForAHostWithoutTheExceptionIsRefusedByTheInitializer() async throws {
        // Another host's exception lowers the client's shared minimum to TLS 1.1; localhost keeps
        // TLS 1.2, checked on the negotiated version.
        let server = try await start("pki/localhost-dnsonly-chain.pem", "pki/localhost-dnsonly.key.pem", configure: Self.tls11Only)
        let store = try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")],
                                   exceptions: [TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv11)])
        #expect(requirement(failure(try await get(store, server))) == .minimumTLSVersion)
        #expect(server.receivedBytes == 0)
    }

    @Test func rsaKeyExchangeOnlyServerIsRefusedEvenWithAnException() async throws {
        // The client's suites are shared by every host and the negotiated one is invisible:
        // forward secrecy stays required (README: what AsyncHTTPClient cannot check).
        let server = try await start("pki/localhost-rsa-dnsonly-chain.pem", "pki/localhost-rsa-dnsonly.key.pem") { tls in
            tls.maximumTLSVersion = .tlsv12
            tls.cipherSuiteValues = [.TLS_RSA_WITH_AES_128_GCM_SHA256]
        }
        let store = try Pins.store([Pins.entry("pki/localhost-rsa-dnsonly.pem")],
                                   exceptions: [TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)])
        let result = try await get(store, server)
        #expect(throws: (any Error).self) { try result.get() }
        #expect(server.receivedBytes == 0)
    }

    @Test func pinnedConfigurationOffersOnlyForwardSecretSuitesFromTLS12() throws {
        let configuration = try HTTPClient.Configuration.pinned(by: try Pins.store([Pins.entry("pki/localhost-dnsonly.pem")]),
                                                                eventLoopGroup: Pins.group, tlsConfiguration: Pins.tls())
        let tls = try #require(configuration.tlsConfiguration)
        #expect(tls.minimumTLSVersion == .tlsv12)
        #expect(!tls.cipherSuites.contains("TLS_RSA_WITH"))
        #expect(tls.cipherSuites.contains("ECDHE"))
    }
}
