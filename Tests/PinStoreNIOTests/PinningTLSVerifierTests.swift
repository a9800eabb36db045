import Foundation
import NIOCore
import NIOSSL
import PinStore
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// The SwiftNIO product with a raw NIO client, against real TLS servers on 127.0.0.1.
@Suite struct PinningTLSVerifierTests {
    func verifier(_ store: PinStore, updateOnEmpty: Bool = false) throws -> PinningTLSVerifier {
        PinningTLSVerifier(store: store, trustRoots: try Pins.anchors, updateOnEmpty: updateOnEmpty)
    }

    /// The failure of a refused connection, or nil (and an issue) when it was not refused by pinning.
    func refusal(_ outcome: RawNIOClient.Outcome) -> PinningFailure? {
        if case .success(let response) = outcome.result {
            Issue.record("expected a refused handshake, got HTTP \(response.status)")
        }
        return outcome.decision?.failure
    }

    @Test func pinnedCertificateSucceedsWithBodyHeadersAndTheValidatedChain() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.good()))
        let response = try outcome.result.get()
        #expect(response.status == 200)
        #expect(response.headers.first(name: "X-Test-Header") == "pinned")
        #expect(response.body == "hello over a pinned connection")
        let chain = try #require(response.validatedChain)
        #expect(chain.count == 3)
        #expect(try Data(chain.leaf.toDERBytes()) == TestResources.certificate("pki/localhost.pem").derRepresentation)
        #expect(try Data(chain[2].toDERBytes()) == TestResources.certificate("pki/root-ca.pem").derRepresentation)
    }

    @Test func attackerCertificateIsRefusedAndTheServerReceivesNoRequestBytes() async throws {
        let server = try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.good()))
        #expect(refusal(outcome)?.reason == .pinMismatch)
        #expect(server.receivedBytes.withLock { $0 } == 0)
        #expect(server.requests.withLock { $0 }.isEmpty)
    }

    @Test func pinnedButExpiredCertificateIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/expired.pem", "pki/intermediate-ca.pem"], key: "pki/expired.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.pinning("pki/expired.pem")))
        guard let error = refusal(outcome)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: outcome.decision))")
            return
        }
        #expect(error.reason == .expired)
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func pinnedButWrongHostCertificateIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/wrong-host.pem", "pki/intermediate-ca.pem"], key: "pki/wrong-host.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.pinning("pki/wrong-host.pem")))
        guard let error = refusal(outcome)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: outcome.decision))")
            return
        }
        #expect(error.reason == .hostnameMismatch)
    }

    @Test func pinnedButSelfSignedWithoutAnAnchorIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/self-signed.pem"], key: "pki/self-signed.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.pinning("pki/self-signed.pem")))
        guard let error = refusal(outcome)?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(String(describing: outcome.decision))")
            return
        }
        #expect(error.reason == .untrustedSelfSigned)
    }

    @Test func intermediatePinnedAtDepthOneIsAccepted() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let store = try Pins.store(fallback: TestResources.fixture("lists/static-depth.json"))
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(store))
        #expect(try outcome.result.get().body == "hello over a pinned connection")
    }

    @Test func emptyStoreIsRefused() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(try Pins.store(fallback: nil)))
        #expect(refusal(outcome)?.reason == .noPinsForHost(updateResult: nil))
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func emptyStoreIsUpdatedOffTheEventLoopThenAccepted() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        let lists = try await TestServer.plain()
        defer { Task { await server.shutdown(); await lists.shutdown() } }
        let store = try Pins.store(fallback: nil, serviceURL: "http://127.0.0.1:\(lists.port)/list.json")
        let outcome = try await RawNIOClient.get("/hello", port: server.port, verifier: try verifier(store, updateOnEmpty: true))
        #expect(try outcome.result.get().body == "hello over a pinned connection")
        #expect(lists.requests.withLock { $0 } == ["GET /list.json"])
    }

    @Test func unpinnedHostWithAValidCertificateIsRefused() async throws {
        // What a redirect to another host meets: 127.0.0.1 is in the certificate but has no pin.
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let outcome = try await RawNIOClient.get("/hello", host: "127.0.0.1", port: server.port, verifier: try verifier(try Pins.good()))
        #expect(refusal(outcome)?.reason == .noPinsForHost(updateResult: nil))
        #expect(refusal(outcome)?.host == "127.0.0.1")
        #expect(server.receivedBytes.withLock { $0 } == 0)
    }

    @Test func fiftyConcurrentConnectionsThroughOneVerifierAreAllCorrect() async throws {
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem")
        defer { Task { await server.shutdown() } }
        let verifier = try verifier(try Pins.good())
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let port = server.port
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask { try await RawNIOClient.get("/hello", port: port, verifier: verifier, context: context).result.get().body }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 50)
        #expect(bodies.allSatisfy { $0 == "hello over a pinned connection" })
    }

    @Test func handlerMakerRefusesCertificateVerificationNone() throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        let context = try NIOSSLContext(configuration: configuration)
        #expect(throws: PinningTLSSetupError.certificateVerificationDisabled) {
            _ = try self.verifier(try Pins.good()).makeClientHandler(context: context, serverHostname: "localhost")
        }
    }

    @Test func handlerMakerRefusesOptionalVerification() throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .optionalVerification
        let context = try NIOSSLContext(configuration: configuration)
        #expect(throws: PinningTLSSetupError.certificateVerificationDisabled) {
            _ = try self.verifier(try Pins.good()).makeClientHandler(context: context, serverHostname: "localhost")
        }
    }
}
