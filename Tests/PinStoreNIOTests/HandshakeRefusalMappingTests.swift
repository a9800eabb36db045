#if canImport(FoundationNetworking)
import FoundationNetworking
import Foundation
import NIOSSL
import PinStore
import PinStoreNIO
import PinStoreTestSupport
import Testing

/// A handshake the server refuses for a reason other than the ATS minimums must not be reported
/// as one: the forward-secrecy remedy (`requiresForwardSecrecy: false`) also lifts the
/// certificate-strength checks, so a wrong diagnosis pushes operators to weaken trust.
@Suite struct HandshakeRefusalMappingTests {
    @Test func forwardSecretServerWithoutASharedCurveIsNotReportedAsLackingForwardSecrecy() async throws {
        // ECDHE only, but on P-521, which the client does not offer.
        let server = try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem") { tls in
            tls.curves = [.secp521r1]
        }
        defer { Task { await server.shutdown() } }
        let base = URLSessionConfiguration.ephemeral
        base.timeoutIntervalForRequest = HangGuard.seconds  // a hang guard: the servers are on loopback
        let session = URLSession(configuration: .pinned(by: try Pins.pinning("pki/localhost.pem"), trustRoots: try Pins.anchors,
                                                        updateOnEmpty: false, basedOn: base))
        let error = await #expect(throws: URLError.self) {
            _ = try await session.data(from: URL(string: "https://localhost:\(server.port)/hello")!)
        }
        let failure = error?.userInfo[NSUnderlyingErrorKey] as? PinningFailure
        withKnownIssue("review finding: any handshake_failure alert is reported as forwardSecrecy") {
            if let violation = failure?.reason.transportSecurityViolation {
                #expect(violation.requirement != .forwardSecrecy, "\(violation)")
            }
        }
    }
}
#endif
