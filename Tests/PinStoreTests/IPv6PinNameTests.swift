import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// An IPv6 address has many text forms (`::1`, `0:0::1`, `0:0:0:0:0:0:0:1`). The leaf rule
/// (AsyncHTTPClient) and static policies compare addresses in one canonical form; the list's
/// pins, `expectedCommonNames` and `domainsConfig` must too, or a pinned address written in
/// another form is looked up as unpinned (and then let through by `domainsConfig` or
/// report-only mode) on the chain-aware adapters.
@Suite struct IPv6PinNameTests {
    static let timestamp: Int64 = 1_893_456_000

    static func validatedChain() throws -> [Data] {
        try TestResources.chainDER("pki/localhost-chain.pem")
    }

    @Test func listPinForAnIPv6AddressMatchesAnyTextFormOfTheAddress() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let list = try FingerprintListSigner(privateKey: StoreFixtures.signingKey())
            .staticList([try SignedLists.entry("localhost", name: "0:0:0:0:0:0:0:1")])
        let store = try StoreFixtures.store(ScriptedFetcher.serving(list), directory: directory.url)
        #expect(await store.update() == .ok)
        let leaf = SHA256Digest.hash(try StoreFixtures.der("localhost"))
        #expect(store.matchPins(commonName: "::1", fingerprint: leaf) == .trusted)
        #expect(store.matchPins(commonName: "0::1", fingerprint: leaf) == .trusted)
    }

    @Test func chainAwareDecisionChecksTheListPinOfAnIPv6AddressWrittenInAnotherForm() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // The server exempts unlisted hosts; the address is pinned (to another certificate).
        let body = DomainsConfigTests.inserting(#"{"sslPinningRequiredForUnlisted": false}"#, into: try FingerprintListSigner.challengeModeBody(
            [try SignedLists.entry("localhost-next", name: "0:0:0:0:0:0:0:1")], timestamp: Self.timestamp))
        let store = try DomainsConfigTests.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())),
                                                          directory: directory)
        #expect(await store.update() == .ok)
        let decision = store.pinDecision(host: "[::1]", validatedChain: try Self.validatedChain())
        #expect(decision.failure?.reason == .pinMismatch)
    }

    @Test func domainsConfigRequirementForAnIPv6AddressHoldsForAnyTextFormOfTheAddress() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let body = DomainsConfigTests.inserting(
            #"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "0:0:0:0:0:0:0:1", "sslPinningRequired": true}]}"#,
            into: try FingerprintListSigner.challengeModeBody([try SignedLists.entry("localhost", name: "other.pinstore.test")], timestamp: Self.timestamp))
        let store = try DomainsConfigTests.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())),
                                                          directory: directory)
        #expect(await store.update() == .ok)
        let decision = store.pinDecision(host: "[::1]", validatedChain: try Self.validatedChain())
        #expect(decision.failure?.reason == .noPinsForHost(updateResult: nil))
    }
}
