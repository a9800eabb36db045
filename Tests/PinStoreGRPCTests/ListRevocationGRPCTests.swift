import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import PinStore
import PinStoreGRPC
import PinStoreTesting
import Testing

/// The signed list's revocations through the pinned gRPC transport, which sees the validated
/// chain: a list pinning the test intermediate CA's key accepts one of its leaves and refuses the
/// one the list revokes.
@Suite struct ListRevocationGRPCTests {
    @available(macOS 15.0, *)
    @Test(.timeLimit(.minutes(10)))
    func aRevokedLeafUnderAPinnedCAKeyIsRefusedAndItsSiblingReached() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let stolen = try pki.issueLeaf(for: ["localhost"])
        let caKey = try #require(Data(base64Encoded: pki.intermediate.spkiSHA256Base64))
        var list = TestPinList(entries: [FingerprintEntry(name: "localhost", fingerprint: caKey, expires: 4_102_444_799, kind: .caPublicKey)])
        list.revocations = [.certificate(stolen.certificate)]
        let world = try await PinnedGRPCTransportTests.World.start(pki: pki, list: list) { _ in }
        let good = try await TestGRPCServer.start(presenting: pki.leaf)
        let bad = try await TestGRPCServer.start(presenting: stolen)
        let answer = try await withGRPCClient(transport: try world.transport(to: good)) { client in
            try await PinnedGRPCTransportTests.echo(client, Array("genuine".utf8))
        }
        var refusal: (any Error)?
        do {
            _ = try await withGRPCClient(transport: try world.transport(to: bad)) { client in
                try await PinnedGRPCTransportTests.echo(client, Array("stolen".utf8))
            }
        } catch {
            refusal = error
        }
        await good.shutdown()
        await bad.shutdown()
        await world.shutdown()
        #expect(answer == Array("genuine".utf8))
        #expect(refusal.flatMap(PinningFailure.init(unwrapping:))?.reason.listRevocation?.kind == .certificate)
        #expect(bad.streams.count == 0)
    }
}
