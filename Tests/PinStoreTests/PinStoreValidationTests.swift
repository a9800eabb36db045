import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The validation semantics of the wire-format note, over a store updated from
/// `Fixtures/lists/static-good.json` (localhost, api.pinstore.test x2, *.pinstore.test).
@Suite final class PinStoreValidationTests {
    let directory: TemporaryDirectory
    let clock = ManualClock.inValidPeriod()
    let store: PinStore

    init() async throws {
        directory = try TemporaryDirectory()
        store = try StoreFixtures.store(ScriptedFetcher.serving(StoreFixtures.list("static-good.json")), directory: directory.url, clock: clock)
        #expect(await store.update() == .ok)
    }

    deinit { directory.cleanUp() }

    @Test func pinnedCertificateIsTrusted() throws {
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func fingerprintOfPinnedCertificateIsTrusted() throws {
        let fingerprint = SHA256Digest.hash(try StoreFixtures.der("localhost"))
        #expect(store.matchPins(commonName: "localhost", fingerprint: fingerprint) == .trusted)
    }

    @Test func otherCertificateForPinnedNameIsUntrusted() throws {
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .untrusted)
    }

    @Test func nameWithoutPinsIsEmpty() throws {
        #expect(store.matchPins(commonName: "example.com", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func eitherOfTwoPinsForOneNameIsTrusted() throws {
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("api-p256")) == .trusted)
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("api-rsa")) == .trusted)
    }

    @Test func nameMatchIsCaseInsensitiveAndIgnoresTrailingDot() throws {
        let der = try StoreFixtures.der("localhost")
        #expect(store.matchPins(commonName: "LocalHost", certificateData: der) == .trusted)
        #expect(store.matchPins(commonName: "localhost.", certificateData: der) == .trusted)
    }

    @Test func wildcardEntryMatchesExactlyOneLabel() throws {
        let der = try StoreFixtures.der("wildcard")
        #expect(store.matchPins(commonName: "www.pinstore.test", certificateData: der) == .trusted)
        #expect(store.matchPins(commonName: "a.b.pinstore.test", certificateData: der) == .empty)
        #expect(store.matchPins(commonName: "pinstore.test", certificateData: der) == .empty)
    }

    @Test func exactNameWithPinsDoesNotFallThroughToWildcardCertificate() throws {
        // api.pinstore.test has exact pins and is covered by *.pinstore.test: both count.
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("wildcard")) == .trusted)
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("localhost")) == .untrusted)
    }

    @Test func expiredEntriesAreSkipped() throws {
        clock.set(Date(timeIntervalSince1970: 4_102_444_799)) // the `expires` second itself is dead
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func chainValidationMatchesLeafPinsAtDepthZero() throws {
        let chain = try TestResources.chainDER("pki/localhost-chain.pem")
        #expect(store.matchPins(commonName: "localhost", certificateChain: chain) == .trusted)
        #expect(store.matchPins(commonName: "localhost", certificateChain: try TestResources.chainDER("pki/attacker-chain.pem")) == .untrusted)
    }

    @Test func emptyChainIsNotTrusted() {
        #expect(store.matchPins(commonName: "localhost", certificateChain: []) == .untrusted)
    }
}

@Suite struct PinStoreValidationOptionsTests {
    @Test func nameOutsideExpectedCommonNamesIsUntrustedEvenWhenPinned() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(StoreFixtures.list("static-good.json")), directory: directory.url,
                                            expectedCommonNames: ["api.pinstore.test"])
        #expect(await store.update() == .ok)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .untrusted)
        #expect(store.matchPins(commonName: "API.pinstore.test", certificateData: try StoreFixtures.der("api-p256")) == .trusted)
    }

    @Test func storeWithNoEntriesAtAllAnswersEmpty() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func fallbackPinsApplyBeforeAnyUpdate() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A list server that never answers: the store is due, so `matchPins` starts a background
        // update, but its answer comes from the fallback at once, never from a download.
        let fetcher = ScriptedFetcher.serving(Data(), delay: .seconds(3_600))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, fallback: StoreFixtures.list("fallback.json"))
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .untrusted)
    }

    @Test func fallbackAndStoredPinsBothCount() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(StoreFixtures.list("static-good.json")), directory: directory.url,
                                            fallback: StoreFixtures.list("fallback.json"))
        #expect(await store.update() == .ok)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        #expect(store.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("api-p256")) == .trusted)
    }

    @Test func issuerPinnedAtDepthOneMatchesOnlyInChain() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try StoreFixtures.store(ScriptedFetcher.serving(StoreFixtures.list("static-depth.json")), directory: directory.url)
        #expect(await store.update() == .ok)
        #expect(store.matchPins(commonName: "localhost", certificateChain: try TestResources.chainDER("pki/localhost-chain.pem")) == .trusted)
        // Any leaf under the pinned intermediate is accepted at depth 1, the attacker's too:
        // that is what an issuer pin means; the leaf pin is the stronger choice.
        #expect(store.matchPins(commonName: "localhost", certificateChain: try TestResources.chainDER("pki/attacker-chain.pem")) == .trusted)
        // A lone leaf cannot satisfy an issuer pin.
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .untrusted)
        #expect(store.matchPins(commonName: "localhost", certificateChain: [try StoreFixtures.der("localhost")]) == .untrusted)
        // A chain under another issuer does not match.
        #expect(store.matchPins(commonName: "localhost", certificateChain: try TestResources.chainDER("pki/rogue-leaf.pem", "pki/rogue-root-ca.pem")) == .untrusted)
    }
}
