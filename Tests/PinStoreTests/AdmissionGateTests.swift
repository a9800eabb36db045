import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// ``AdmissionGate``: whether a kept connection may carry one more request. Driven with numbers
/// (no store, no socket), then through a store whose list changes.
@Suite struct AdmissionGateTests {
    static func localhostChain() throws -> ValidatedChain {
        try #require(ValidatedChain(alreadyValidatedByCaller: try TestResources.chainDER("pki/localhost-chain.pem")))
    }

    static func gate(host: String = "localhost", admittedUnder generation: UInt64) throws -> AdmissionGate {
        AdmissionGate(evidence: .chain(try localhostChain(), host: try HostName(host)), admittedUnder: generation)
    }

    // MARK: The gate alone

    @Test func writeUnderTheGenerationItWasAdmittedUnderGoesOut() throws {
        #expect(try Self.gate(admittedUnder: 3).verdict(at: 3) == .admit)
    }

    @Test func writeAfterTheListChangedIsRecheckedFirst() throws {
        #expect(try Self.gate(admittedUnder: 3).verdict(at: 4) == .recheck)
    }

    @Test func recheckThatStillPinsUnderOneGenerationAdmitsUnderIt() throws {
        var gate = try Self.gate(admittedUnder: 3)
        #expect(gate.recheckFinished(pinned: true, before: 4, after: 4) == .admit)
        #expect(gate.pinnedUnder == 4)
        #expect(gate.verdict(at: 4) == .admit)
    }

    @Test func recheckDuringWhichAListLandedIsRecheckedAgain() throws {
        var gate = try Self.gate(admittedUnder: 3)
        #expect(gate.recheckFinished(pinned: true, before: 4, after: 5) == .recheck)
        #expect(gate.verdict(at: 5) == .recheck)
    }

    @Test func recheckThatNoLongerPinsRefusesForGood() throws {
        var gate = try Self.gate(admittedUnder: 3)
        #expect(gate.recheckFinished(pinned: false, before: 4, after: 4) == .refuse)
        // Not even a later list that pins it again reopens this connection.
        #expect(gate.verdict(at: 4) == .refuse)
        #expect(gate.verdict(at: 3) == .refuse)
        #expect(gate.recheckFinished(pinned: true, before: 5, after: 5) == .refuse)
    }

    @Test func connectionAdmittedForOneHostIsNeverAdmittedForAnother() throws {
        let gate = try Self.gate(host: "localhost", admittedUnder: 3)
        #expect(gate.verdict(at: 3, for: try HostName("LOCALHOST.")) == .admit)
        #expect(gate.verdict(at: 3, for: try HostName("api.example.com")) == .refuse)
        #expect(gate.verdict(at: 4, for: try HostName("api.example.com")) == .refuse)
    }

    // MARK: Through a store

    static func entry(_ certificate: String, name: String) throws -> FingerprintEntry {
        FingerprintEntry(name: name, fingerprint: try TestResources.certificate("pki/\(certificate).pem").fingerprint, expires: 4_102_444_799)
    }

    /// A store whose list pins localhost.pem for localhost, and its fetcher.
    static func store(_ directory: TemporaryDirectory) async throws -> (PinStore, ScriptedFetcher) {
        let fetcher = ScriptedFetcher.serving(try TestLists.signedStatic([try entry("localhost", name: "localhost")], key: StoreFixtures.signingKey()))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        return (store, fetcher)
    }

    static func publish(_ entries: [FingerprintEntry], on fetcher: ScriptedFetcher, to store: PinStore) async throws {
        let body = try TestLists.signedStatic(entries, key: StoreFixtures.signingKey())
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: body) }
        #expect(await store.update(mode: .forced) == .ok)
    }

    @Test func connectionStillPinnedByTheNextListIsAdmittedUnderItsGeneration() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let (store, fetcher) = try await Self.store(directory)
        var gate = try Self.gate(admittedUnder: store.listGeneration)
        try await Self.publish([try Self.entry("localhost", name: "localhost"), try Self.entry("api-p256", name: "api.pinstore.test")],
                               on: fetcher, to: store)
        let outcome = store.admit(&gate)
        #expect(outcome.verdict == .admit)
        #expect(outcome.generation == store.listGeneration)
        #expect(gate.pinnedUnder == store.listGeneration)
    }

    @Test func connectionWhosePinTheNextListWithdrewIsRefused() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let (store, fetcher) = try await Self.store(directory)
        var gate = try Self.gate(admittedUnder: store.listGeneration)
        #expect(store.admit(&gate).verdict == .admit)
        try await Self.publish([try Self.entry("api-p256", name: "api.pinstore.test")], on: fetcher, to: store)
        #expect(store.admit(&gate).verdict == .refuse)
        #expect(gate.pinnedUnder == nil)
    }

    @Test func storeNeverAdmitsAConnectionForAnotherHostThanItsOwn() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let (store, _) = try await Self.store(directory)
        var gate = try Self.gate(admittedUnder: store.listGeneration)
        #expect(store.admit(&gate, host: try HostName("api.pinstore.test")).verdict == .refuse)
    }

    @Test func leafAdmissionIsRecheckedOverEveryNameTheLeafCovers() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let (store, fetcher) = try await Self.store(directory)
        let leaf = try StoreFixtures.der("localhost")
        var gate = AdmissionGate(evidence: .leaf(leaf, peerAddress: "127.0.0.1"), admittedUnder: store.listGeneration)
        #expect(store.admit(&gate).verdict == .admit)
        try await Self.publish([try Self.entry("api-p256", name: "api.pinstore.test")], on: fetcher, to: store)
        #expect(store.admit(&gate).verdict == .refuse)
    }
}
