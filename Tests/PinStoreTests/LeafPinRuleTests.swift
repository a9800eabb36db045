import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The leaf-only rule (`PinStore.leafDecision`) that adapters seeing only the server's leaf
/// apply: every pinned name the leaf's names cover must pin this leaf.
@Suite struct LeafPinRuleTests {
    /// A store whose pins are `entries` (`name`, certificate fixture, depth), as a fallback list.
    private func store(_ entries: [(String, String, Int)], expectedCommonNames: [String]? = nil) throws -> (PinStore, TemporaryDirectory) {
        let items = try entries.map { name, certificate, depth -> [String: Any] in
            ["name": name, "fingerprint": try TestResources.certificate("pki/\(certificate).pem").fingerprintBase64,
             "expires": 4_102_444_799, "depth": depth]
        }
        let fallback = try JSONSerialization.data(withJSONObject: ["fingerprints": items])
        let directory = try TemporaryDirectory()
        let store = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url, fallback: fallback,
                                            expectedCommonNames: expectedCommonNames)
        return (store, directory)
    }

    private func decide(_ store: PinStore, _ certificate: String) throws -> PinningDecision {
        store.leafDecision(leafCertificate: try StoreFixtures.der(certificate)).decision
    }

    @Test func leafPinnedUnderItsNameIsAllowed() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").isAllowed)
    }

    @Test func otherLeafForAPinnedNameIsAMismatch() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "attacker").failure?.reason == .pinMismatch)
    }

    @Test func leafCoveringNoPinnedNameHasNoPins() throws {
        let (store, directory) = try store([("api.pinstore.test", "api-p256", 0)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func ipAddressSANIsAPinnedNameToo() throws {
        // localhost.pem also names 127.0.0.1; pinning that address to another leaf refuses it.
        let (store, directory) = try store([("localhost", "localhost", 0), ("127.0.0.1", "attacker", 0)])
        defer { directory.cleanUp() }
        let failure = try decide(store, "localhost").failure
        #expect(failure?.reason == .pinMismatch)
        #expect(failure?.host == "127.0.0.1")
    }

    @Test func wildcardPinCoversAnExactLeafName() throws {
        let (store, directory) = try store([("*.pinstore.test", "wildcard", 0)])
        defer { directory.cleanUp() }
        // api-p256.pem names api.pinstore.test, which the *.pinstore.test pin applies to.
        #expect(try decide(store, "api-p256").failure?.reason == .pinMismatch)
        #expect(try decide(store, "wildcard").isAllowed)
    }

    @Test func wildcardLeafIsCheckedAgainstEveryExactNameItCouldServe() throws {
        // *.pinstore.test could serve api.pinstore.test, pinned to another certificate.
        let (store, directory) = try store([("api.pinstore.test", "api-p256", 0)])
        defer { directory.cleanUp() }
        let failure = try decide(store, "wildcard").failure
        #expect(failure?.reason == .pinMismatch)
        #expect(failure?.host == "api.pinstore.test")
    }

    @Test func issuerPinsAloneCannotBeProvedFromTheLeaf() throws {
        let (store, directory) = try store([("localhost", "intermediate-ca", 1)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").failure?.reason == .issuerPinsNeedChain)
    }

    @Test func matchingLeafPinIsEnoughWhenIssuerPinsAreAlsoListed() throws {
        let (store, directory) = try store([("localhost", "intermediate-ca", 1), ("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").isAllowed)
    }

    @Test func leafWithANameOutsideExpectedCommonNamesIsRefused() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)], expectedCommonNames: ["localhost"])
        defer { directory.cleanUp() }
        // localhost.pem is also valid for 127.0.0.1, which is not expected.
        let failure = try decide(store, "localhost").failure
        #expect(failure?.reason == .hostNotExpected)
        #expect(failure?.host == "127.0.0.1")
    }

    @Test func leafWhoseNamesAreAllExpectedIsAllowed() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)], expectedCommonNames: ["localhost", "127.0.0.1"])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").isAllowed)
    }

    @Test func bytesThatAreNotACertificateAreRefused() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        let decision = store.leafDecision(leafCertificate: Data("not a certificate".utf8)).decision
        guard case .chainNotTrusted? = decision.failure?.reason else {
            Issue.record("expected chainNotTrusted, got \(decision)")
            return
        }
    }

    @Test func ipv6AddressesCompareInCanonicalForm() {
        #expect(IPAddressText.canonical("0:0:0:0:0:0:0:1") == "::1")
        #expect(IPAddressText.canonical("127.0.0.1") == "127.0.0.1")
        #expect(IPAddressText.canonical("localhost") == "localhost")
    }
}
