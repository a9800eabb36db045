import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC
import PinStoreTesting
import Testing

/// Certificate Transparency through the pinned gRPC transport: the handshake sees the whole
/// validated chain (the SCTs are signed over the issuer's key), so a host the signed list puts
/// under CT is judged, where AsyncHTTPClient's leaf-only adapter has to refuse such stores.
/// Leaves carry SCTs from test logs made through OpenSSL; the test CA counts as public here
/// (`certificateTransparencyForPrivateAnchors`).
@Suite struct CertificateTransparencyGRPCTests {
    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func aCTEnforcedHostIsReachedWithEnoughSCTsAndRefusedWithOne() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let logs = [try TestCTLog(keyType: .p256), try TestCTLog(keyType: .rsa2048)]
        let compliant = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logs[0]), TestSCT(log: logs[1])])
        let oneSCT = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logs[0])])
        var list = TestPinList(pinning: [compliant.certificate, oneSCT.certificate])
        list.certificateTransparency = TestCTLogList(
            logs: [.init(logs[0], operatorName: "Operator A"), .init(logs[1], operatorName: "Operator B")],
            hosts: ["localhost": .enforce], timestamp: Date(timeIntervalSinceNow: -86_400))
        let world = try await PinnedGRPCTransportTests.World.start(pki: pki, list: list) {
            $0.certificateTransparencyForPrivateAnchors = true
        }
        let good = try await TestGRPCServer.start(presenting: compliant)
        let bad = try await TestGRPCServer.start(presenting: oneSCT)
        let answer = try await withGRPCClient(transport: try world.transport(to: good)) { client in
            try await PinnedGRPCTransportTests.echo(client, Array("logged".utf8))
        }
        var refusal: (any Error)?
        do {
            _ = try await withGRPCClient(transport: try world.transport(to: bad)) { client in
                try await PinnedGRPCTransportTests.echo(client, Array("unlogged".utf8))
            }
        } catch {
            refusal = error
        }
        await good.shutdown()
        await bad.shutdown()
        await world.shutdown()
        #expect(answer == Array("logged".utf8))
        guard let violation = refusal.flatMap(PinningFailure.init(unwrapping:))?.reason.certificateTransparencyViolation else {
            Issue.record("expected a CT refusal, got \(String(describing: refusal))")
            return
        }
        #expect(violation.problem == .tooFewSCTs(required: 2, counted: 1))
        #expect(bad.streams.count == 0)
    }
}
