import Foundation
import PinStore
import PinStoreTesting
import Testing

/// The kit's loopback servers: the list server in both modes, and the HTTPS server's chain.
@Suite struct ServerTests {
    @Test func listServerServesTheSignedStaticList() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let key = try TestListSigningKey()
        let list = TestPinList(pinning: [pki.leaf.certificate])
        let entries = try await TestListServer.withServer(serving: list, signedWith: key) { server in
            let response = try await PlainHTTP.get(server.listURL)
            return try FingerprintList.verifiedEntries(staticList: response.body, publicKey: key.publicKey)
        }
        #expect(entries == list.entries)
    }

    @Test func listServerInChallengeModeSignsTheClientsChallenge() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let key = try TestListSigningKey()
        let list = TestPinList(pinning: [pki.leaf.certificate])
        let challenge = Data(repeating: 9, count: 16).base64EncodedString()
        let entries = try await TestListServer.withServer(serving: list, signedWith: key, mode: .challenge) { server in
            let response = try await PlainHTTP.get(server.listURL, headers: [PinStore.challengeHeader: challenge])
            let signature = try #require(response.headers[PinStore.signatureHeader] as? String)
            return try FingerprintList.verifiedEntries(challengeResponse: response.body, challenge: challenge,
                                                       signature: signature, publicKey: key.publicKey).entries
        }
        #expect(entries == list.entries)
    }

    @Test func listServerInChallengeModeRefusesARequestWithoutChallenge() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let status = try await TestListServer.withServer(serving: TestPinList(pinning: [pki.leaf.certificate]),
                                                         signedWith: try TestListSigningKey(), mode: .challenge) { server in
            try await PlainHTTP.get(server.listURL).status
        }
        #expect(status == 400)
    }

    @Test func publishedListReplacesTheServedOne() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let key = try TestListSigningKey()
        let renewed = try pki.issueLeaf(for: ["localhost"])
        let entries = try await TestListServer.withServer(serving: TestPinList(pinning: [pki.leaf.certificate]), signedWith: key) { server in
            try server.publish(TestPinList(pinning: [renewed.certificate]))
            return try FingerprintList.verifiedEntries(staticList: try await PlainHTTP.get(server.listURL).body, publicKey: key.publicKey)
        }
        #expect(entries.map(\.fingerprint) == [renewed.certificate.fingerprint])
    }

    @Test func httpsServerPresentsTheChosenChain() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let presented = try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            try await PresentedChain.read(port: server.port)
        }
        #expect(presented == pki.leaf.chainDER)
    }

    @Test func httpsServerPresentsTheImpostorChainWhenChosen() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let presented = try await TestHTTPSServer.withServer(presenting: pki.impostor) { server in
            try await PresentedChain.read(port: server.port)
        }
        #expect(presented == pki.impostor.chainDER)
    }

    @Test func httpsServerURLNamesTheLeafsFirstNameAndItsPort() async throws {
        let pki = try TestPKI(hosts: ["localhost", "api.example.test"])
        try await TestHTTPSServer.withServer(presenting: pki.leaf) { server in
            #expect(server.url(path: "/v1/items").absoluteString == "https://localhost:\(server.port)/v1/items")
        }
    }
}

/// The store and the test kit's list server together: an unchanged list costs a 304.
@Suite struct ConditionalListDownloadTests {
    @Test func aStoreAskingTheTestListServerAgainGetsA304AndKeepsItsList() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let key = try TestListSigningKey()
        let lists = try await TestListServer.start(serving: TestPinList(pinning: [pki.leaf.certificate]), signedWith: key)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-conditional-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try PinStore(configuration: PinStore.Configuration(serviceURL: lists.listURL, publicKey: key.publicKeyBase64,
                                                                      storageDirectory: folder, requestTimeout: 30))
        #expect(await store.updateWithReport(mode: .forced).activity == .downloaded)
        let again = await store.updateWithReport(mode: .forced)
        #expect(again.result == .ok)
        #expect(again.activity == .notModified)
        // A new list is downloaded whole again.
        try lists.publish(TestPinList(pinning: [pki.leaf.certificate, try pki.issueLeaf(for: ["localhost"]).certificate]))
        #expect(await store.updateWithReport(mode: .forced).activity == .downloaded)
        try await lists.shutdown()
    }
}
