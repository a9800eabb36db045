import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// The static list's optional whole-list signature: what stops replay, splicing and
/// re-depthing of static lists, while deployed clients still read the list as before.
@Suite struct WholeListSignatureTests {
    static let localhost = FingerprintEntry(name: "localhost", fingerprint: Data(repeating: 1, count: 32), expires: 4_102_444_799)
    static let api = FingerprintEntry(name: "api.pinstore.test", fingerprint: Data(repeating: 2, count: 32), expires: 4_102_444_799)

    static func signed(_ entries: [FingerprintEntry], timestamp: Int64) throws -> Data {
        try FingerprintListSigner(privateKey: StoreFixtures.signingKey()).staticList(entries, timestamp: timestamp)
    }

    /// A store on a fresh folder (or `directory`), answering with whatever `fetcher` serves.
    static func store(_ fetcher: ScriptedFetcher, directory: URL, requireListSignature: Bool = false) throws -> PinStore {
        var configuration = try StoreFixtures.configuration(directory: directory)
        configuration.requireListSignature = requireListSignature
        return try PinStore(configuration: configuration, fetcher: fetcher, clock: ManualClock.inValidPeriod())
    }

    static func serve(_ body: Data) -> ScriptedFetcher.Script {
        { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: body) }
    }

    @Test func aSignedListStillVerifiesEntryByEntryAsDeployedClientsDo() throws {
        let body = try Self.signed([Self.localhost, Self.api], timestamp: 1_800_000_000)
        let key = try P256PublicKey(configuredString: StoreFixtures.publicKey())
        #expect(try FingerprintList.verifiedEntries(staticList: body, publicKey: key) == [Self.localhost, Self.api])
        #expect(String(decoding: body, as: UTF8.self).contains("\"listSignature\": \"ME"))
    }

    @Test func aStoreRequiringTheSignatureAcceptsASignedList() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try Self.signed([Self.localhost], timestamp: 1_800_000_000))
        #expect(try await Self.store(fetcher, directory: directory.url, requireListSignature: true).update() == .ok)
    }

    @Test func aStoreRequiringTheSignatureRefusesAListWithoutOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        #expect(try await Self.store(fetcher, directory: directory.url, requireListSignature: true).update() == .invalidSignature)
    }

    @Test func aStoreNotRequiringTheSignatureAcceptsTheDeployedFormat() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        #expect(try await Self.store(fetcher, directory: directory.url).update() == .ok)
    }

    @Test func aChangedDepthBreaksTheSignatureEvenThoughEntrySignaturesHold() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let body = String(decoding: try Self.signed([Self.localhost], timestamp: 1_800_000_000), as: UTF8.self)
        // depth is outside the per-entry signed string: only the whole-list signature sees this.
        let redepthed = body.replacingOccurrences(of: "\"expires\": 4102444799,", with: "\"expires\": 4102444799, \"depth\": 1,")
        #expect(redepthed != body)
        let fetcher = ScriptedFetcher.serving(Data(redepthed.utf8))
        #expect(try await Self.store(fetcher, directory: directory.url).update() == .invalidSignature)
    }

    @Test func anEntryRemovedFromASignedListBreaksTheSignature() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let body = String(decoding: try Self.signed([Self.localhost, Self.api], timestamp: 1_800_000_000), as: UTF8.self)
        var lines = body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let apiLine = try #require(lines.firstIndex { $0.contains("api.pinstore.test") })
        lines.remove(at: apiLine)
        lines[apiLine - 1] = String(lines[apiLine - 1].dropLast())   // the comma before it
        let spliced = Data(lines.joined(separator: "\n").utf8)
        _ = try FingerprintListDocument(body: spliced)   // still a well-formed list
        #expect(try await Self.store(ScriptedFetcher.serving(spliced), directory: directory.url).update() == .invalidSignature)
    }

    @Test func anOlderSignedListIsRefusedAsARollback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let newer = try Self.signed([Self.localhost], timestamp: 1_800_000_100)
        let older = try Self.signed([Self.localhost, Self.api], timestamp: 1_800_000_000)
        let fetcher = ScriptedFetcher.serving(newer)
        let store = try Self.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        fetcher.answer(Self.serve(older))
        #expect(await store.update(mode: .forced) == .invalidData)
        #expect(store.storedEntries == [Self.localhost])
    }

    @Test func anUnsignedListAfterASignedOneIsRefusedAsAMissingSignature() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try Self.signed([Self.localhost], timestamp: 1_800_000_100))
        let store = try Self.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        // The deployed format, every entry signed, but no whole-list signature.
        fetcher.answer(Self.serve(try StoreFixtures.list("static-good.json")))
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .invalidSignature)
        #expect(report.error?.code == .invalidListSignature)
        #expect(report.error?.reason.contains("no whole-list signature") == true, "\(String(describing: report.error))")
        #expect(store.storedEntries == [Self.localhost])
    }

    @Test func theRollbackFloorSurvivesARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try Self.signed([Self.localhost], timestamp: 1_800_000_100))
        #expect(try await Self.store(fetcher, directory: directory.url).update() == .ok)
        fetcher.answer(Self.serve(try Self.signed([Self.api], timestamp: 1_800_000_000)))
        let restarted = try Self.store(fetcher, directory: directory.url)
        #expect(await restarted.update(mode: .forced) == .invalidData)
        #expect(restarted.storedEntries == [Self.localhost])
    }

    @Test func aNewerSignedListReplacesTheStoredOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try Self.signed([Self.localhost], timestamp: 1_800_000_000))
        let store = try Self.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        fetcher.answer(Self.serve(try Self.signed([Self.api], timestamp: 1_800_000_100)))
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries == [Self.api])
    }

    @Test func aListSignatureThatIsNotTheFirstMemberIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let body = String(decoding: try Self.signed([Self.localhost], timestamp: 1_800_000_000), as: UTF8.self)
        let signatureLine = try #require(body.split(separator: "\n").first { $0.contains("listSignature") })
        let moved = body.replacingOccurrences(of: signatureLine + "\n", with: "")
            .replacingOccurrences(of: "\"timestamp\": 1800000000,", with: "\"timestamp\": 1800000000,\n" + signatureLine)
        #expect(try await Self.store(ScriptedFetcher.serving(Data(moved.utf8)), directory: directory.url).update() == .invalidData)
    }

    @Test func aSignedListWithoutATimestampIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let plain = String(decoding: try TestLists.signedStatic([Self.localhost], key: StoreFixtures.signingKey()), as: UTF8.self)
        let unsigned = Data(plain.replacingOccurrences(of: "{\"fingerprints\"", with: "{\"listSignature\": \"\", \"fingerprints\"").utf8)
        let body = try WholeListSignature.sign(unsigned, with: StoreFixtures.signingKey())
        #expect(try await Self.store(ScriptedFetcher.serving(body), directory: directory.url).update() == .invalidData)
    }

    @Test func aListSignedWithAnotherKeyIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let ours = String(decoding: try Self.signed([Self.localhost], timestamp: 1_800_000_000), as: UTF8.self)
        let theirs = String(decoding: try FingerprintListSigner(privateKey: StoreFixtures.otherSigningKey()).staticList([Self.localhost], timestamp: 1_800_000_000), as: UTF8.self)
        // Our entry signatures, their list signature.
        let foreign = try #require(theirs.split(separator: "\n").first { $0.contains("listSignature") })
        let ourLine = try #require(ours.split(separator: "\n").first { $0.contains("listSignature") })
        let mixed = Data(ours.replacingOccurrences(of: ourLine, with: foreign).utf8)
        #expect(try await Self.store(ScriptedFetcher.serving(mixed), directory: directory.url).update() == .invalidSignature)
    }
}
