import Foundation
import Testing
import PinStore
import PinStoreTesting
import PinStoreTestSupport
@testable import PinStorePublisher

/// The real prober against real TLS servers on 127.0.0.1.
@Suite(.timeLimit(.minutes(10))) struct TLSPartnerProberTests {
    static let host = "partner.pinstore.test"

    @Test func aValidChainIsRecordedAndValidated() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let results = try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        let observation = try #require(results.first?.observation)
        #expect(results.count == 1)
        #expect(observation.presentedChain == pki.leaf.chainDER)
        #expect(observation.validatedChain == pki.leaf.chainDER + [pki.root.derRepresentation])
        #expect(observation.validationFailure == nil)
    }

    @Test func anImpostorChainIsRecordedWithItsFailure() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let results = try await TestHTTPSServer.withServer(presenting: pki.impostor) { server in
            await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        let observation = try #require(results.first?.observation)
        #expect(observation.presentedChain == pki.impostor.chainDER)
        #expect(observation.validatedChain.isEmpty)
        #expect(observation.validationFailure?.contains("unknownIssuer") == true)
    }

    @Test func aChainForAnotherHostNameIsRefused() async throws {
        let pki = try TestPKI(hosts: ["elsewhere.pinstore.test"])
        let results = try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        let observation = try #require(results.first?.observation)
        #expect(observation.presentedChain == pki.leaf.chainDER)
        #expect(observation.validatedChain.isEmpty)
        #expect(observation.validationFailure?.contains("hostnameMismatch") == true)
    }

    @Test func anExpiredChainIsRecordedWithItsFailure() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let expired = try pki.issueLeaf(for: [Self.host], validity: DateInterval(start: Date().addingTimeInterval(-20 * 86_400), duration: 10 * 86_400))
        let results = try await TestHTTPSServer.withServer(presenting: expired) { server in
            await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        let observation = try #require(results.first?.observation)
        #expect(observation.validatedChain.isEmpty)
        #expect(observation.validationFailure?.contains("expired") == true)
    }

    @Test func twoAddressesServingTwoCertificatesGiveTwoObservations() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let second = try pki.issueLeaf(for: [Self.host])
        let results = try await TestHTTPSServer.withServer(presenting: pki.leaf) { first in
            try await TestHTTPSServer.withServer(presenting: second) { other in
                await loopbackProber([first.port, other.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
            }
        }
        let observations = results.compactMap(\.observation)
        #expect(observations.count == 2)
        #expect(observations.map { $0.presentedChain.first } == [pki.leaf.certificate.derRepresentation, second.certificate.derRepresentation])
        #expect(Set(observations.map(\.address)).count == 2)
        #expect(observations.allSatisfy { $0.validationFailure == nil && !$0.validatedChain.isEmpty })
    }

    @Test func aClosedPortIsUnreachable() async throws {
        let closed = try ClosedLoopbackPort()
        let pki = try TestPKI(hosts: [Self.host])
        let results = await loopbackProber([closed.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        #expect(results == [.unreachable(address: "127.0.0.1:\(closed.port)", reason: "cannot connect to 127.0.0.1:\(closed.port): connection refused")])
    }

    @Test func aListenerThatNeverAnswersIsUnreachableAfterTheTimeout() async throws {
        let silent = try SilentLoopbackListener()
        let pki = try TestPKI(hosts: [Self.host])
        let results = await loopbackProber([silent.port], timeout: .milliseconds(500))
            .probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        #expect(results.count == 1)
        #expect(results.first?.unreachableReason?.contains("no TLS handshake") == true)
    }

    @Test func aServerThatAnswersWithoutTLSIsUnreachable() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let key = try TestListSigningKey()
        let results = try await TestListServer.withServer(serving: TestPinList(pinning: [pki.leaf.certificate]), signedWith: key) { plain in
            await loopbackProber([plain.listURL.port ?? 0]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        #expect(results.count == 1)
        #expect(results.first?.observation == nil)
        #expect(results.first?.unreachableReason?.isEmpty == false)
    }

    @Test func aChainLongerThanTheLimitIsRefusedAndNotKept() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        // The genuine leaf, then its intermediate twenty times (a server can send any list).
        let chain = pem(pki.leaf.certificate) + String(repeating: pem(pki.intermediate), count: 20)
        let server = try await startServer(chainPEM: chain, privateKeyPEM: pki.leaf.privateKeyPEM)
        let results = await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        try await server.shutdown()
        #expect(results.count == 1)
        #expect(results.first?.unreachableReason?.contains("21 certificates") == true)
    }

    @Test func aChainLargerThanTheByteLimitIsRefusedAndNotKept() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let results = try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            await loopbackProber([server.port]) { $0.maximumChainBytes = pki.leaf.certificate.derRepresentation.count }
                .probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        #expect(results.count == 1)
        #expect(results.first?.unreachableReason?.contains("larger than") == true)
    }

    /// Issue 45's certificate: a leaf with a subject of about 60 KB (DER), which fits in the
    /// 64 KiB a chain may take, is refused for its own size during the handshake.
    @Test func aCertificateLargerThanTheCertificateLimitIsRefusedAndNotKept() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        // 64-character units take about 75 bytes each in DER.
        let big = try pki.issueLeaf(for: [Self.host], subjectPadding: 51_000)
        let size = big.certificate.derRepresentation.count
        try #require(size > 55_000)
        try #require(big.chainDER.reduce(0) { $0 + $1.count } <= TLSPartnerProber.Configuration().maximumChainBytes)
        let results = try await TestHTTPSServer.withServer(presenting: big) { server in
            await loopbackProber([server.port]).probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        #expect(results.count == 1)
        #expect(results.first?.observation == nil)
        #expect(results.first?.unreachableReason?.contains("a certificate of \(size) bytes") == true)
    }

    @Test func addressesPastTheCapAreReportedNotProbed() async throws {
        let closed = try ClosedLoopbackPort()
        let pki = try TestPKI(hosts: [Self.host])
        let results = await loopbackProber([closed.port, closed.port + 0, closed.port]) { $0.maximumAddresses = 1 }
            .probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        #expect(results.count == 3)
        #expect(results.dropFirst().allSatisfy { $0.unreachableReason?.hasPrefix("not probed") == true })
    }

    @Test func manyAddressesAreAllProbedWithFewHandshakesAtOnce() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let results = try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            await loopbackProber(Array(repeating: server.port, count: 7)) { $0.maximumConcurrentHandshakes = 2 }
                .probe(ProbeTarget(host: Self.host, port: 443, trustRoots: pki.trustRoots))
        }
        #expect(results.count == 7)
        #expect(results.allSatisfy { $0.observation?.validationFailure == nil && $0.observation != nil })
    }

    @Test func theSystemResolverReadsAddressLiteralsOfBothFamilies() async throws {
        let resolver = SystemAddressResolver()
        #expect(try await resolver.addresses(for: "127.0.0.1", port: 8443) == [ProbeAddress(ip: "127.0.0.1", port: 8443)])
        #expect(try await resolver.addresses(for: "::1", port: 443).map(\.description) == ["[::1]:443"])
    }

    @Test func aNameThatDoesNotResolveIsUnreachableWithTheResolversWords() async throws {
        // An empty name is refused before any lookup (no network needed).
        let results = await TLSPartnerProber().probe(ProbeTarget(host: "", port: 443, trustRoots: .system))
        #expect(results.count == 1)
        #expect(results.first?.unreachableReason?.contains("does not resolve") == true)
    }
}
