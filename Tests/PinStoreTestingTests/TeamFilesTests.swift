import Foundation
import PinStore
import PinStoreTesting
import Testing

/// What a team's own tests start from: its own signing key in a PEM file, a list signed
/// elsewhere, a tampered list; and waiting for the store's next update instead of sleeping.
@Suite struct TeamFilesTests {
    /// `Fixtures/keys/`: the repository's committed throwaway list-signing key and its public half.
    static let keys = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fixtures/keys").standardizedFileURL

    @Test func aKeyLoadedFromPEMHasThePublicKeyTheAppShips() throws {
        let pem = try String(contentsOf: Self.keys.appendingPathComponent("list-signing.key.pem"), encoding: .utf8)
        let shipped = try String(contentsOf: Self.keys.appendingPathComponent("list-signing.pub.b64"), encoding: .utf8)
        let key = try TestListSigningKey(pem: pem)
        #expect(key.publicKeyBase64 == shipped.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func aPEMThatIsNoKeyIsATypedError() {
        #expect(throws: PinStoreError.self) { try TestListSigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }

    @Test(.timeLimit(.minutes(10)))
    func aTamperedListServedAsGivenIsRefusedAndThePinsStay() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let key = try TestListSigningKey()
        let list = TestPinList(pinning: [pki.leaf.certificate])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-teamfiles-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestListServer.withServer(serving: list, signedWith: key) { server in
            let store = try PinStore(configuration: .init(serviceURL: server.listURL, publicKey: key.publicKeyBase64,
                                                          storageDirectory: directory))
            let updates = store.updates()
            try #require(await store.update(mode: .forced) == .ok)

            var tampered = try key.signedStaticList(TestPinList(entries: [
                FingerprintEntry(name: "localhost", fingerprint: Data(repeating: 1, count: 32), expires: 4_102_444_799),
            ]))
            tampered[tampered.count / 2] ^= 0x01
            server.publish(body: tampered)
            #expect(await store.update(mode: .forced) != .ok)
            #expect(store.storedEntries == list.entries)

            // Both updates reached the stream, in order, with their results.
            var results: [PinStore.UpdateResult] = []
            for await report in updates {
                results.append(report.result)
                if results.count == 2 { break }
            }
            #expect(results.first == .ok)
            #expect(results.last != .ok)
        }
    }
}
