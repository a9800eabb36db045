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
        store.leafDecision(leaf: try StoreFixtures.der(certificate), peerAddress: LeafPeer.notInLeaf)
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

    @Test func aLeafNamingThePeerAddressIsRefusedEvenWhenEveryNameIsPinned() throws {
        // swift-nio-ssl accepts localhost.pem (which names 127.0.0.1) from 127.0.0.1 for any
        // requested host: the pins of that host cannot be known here.
        let (store, directory) = try store([("localhost", "localhost", 0), ("127.0.0.1", "localhost", 0)])
        defer { directory.cleanUp() }
        let failure = store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: "127.0.0.1").failure
        guard let error = failure?.reason.chainValidationError else {
            Issue.record("expected the address name to be refused, got \(String(describing: failure))")
            return
        }
        #expect(error.reason == .hostnameMismatch)
        #expect(failure?.host == "127.0.0.1")
    }

    @Test func aLeafNamingThePeerAddressInAnotherTextFormIsRefused() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        // An IPv4 peer on an IPv6 socket.
        #expect(store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: "::ffff:127.0.0.1").failure != nil)
    }

    @Test func aLeafWithAnAddressNameIsRefusedWhenThePeerIsUnknown() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        #expect(store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: nil).failure != nil)
    }

    @Test func anAddressNameOtherThanThePeerIsNotAHostTheLeafServes() throws {
        // The connection did not come from 127.0.0.1, so swift-nio-ssl matched a DNS name: the
        // pins of 127.0.0.1 (another certificate) do not apply to it.
        let (store, directory) = try store([("localhost", "localhost", 0), ("127.0.0.1", "attacker", 0)])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").isAllowed)
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

    @Test func wildcardLeafIsRefusedWhenExpectedCommonNamesAreSet() throws {
        // *.pinstore.test could serve hosts that are not expected.
        let (store, directory) = try store([("*.pinstore.test", "wildcard", 0)], expectedCommonNames: ["api.pinstore.test"])
        defer { directory.cleanUp() }
        let failure = try decide(store, "wildcard").failure
        #expect(failure?.reason == .hostNotExpected)
        #expect(failure?.host.hasSuffix(".pinstore.test") == true)
    }

    @Test func leafWhoseNamesAreAllExpectedIsAllowed() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)], expectedCommonNames: ["localhost", "127.0.0.1"])
        defer { directory.cleanUp() }
        #expect(try decide(store, "localhost").isAllowed)
    }

    @Test func bytesThatAreNotACertificateAreRefused() throws {
        let (store, directory) = try store([("localhost", "localhost", 0)])
        defer { directory.cleanUp() }
        let decision = store.leafDecision(leaf: Data("not a certificate".utf8), peerAddress: LeafPeer.notInLeaf)
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

/// Leaf names the leaf view must never leave undecided (security review of issue 23).
@Suite struct LeafViewUnusualNameTests {
    static func store(_ configure: (inout PinStore.Configuration) -> Void = { _ in }) throws -> PinStore {
        let items: [[String: Any]] = [["name": "payments", "fingerprint": try TestResources.certificate("pki/localhost.pem").fingerprint.base64EncodedString(),
                                       "expires": 4_102_444_799]]
        var configuration = try StoreFixtures.configuration(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-leaf-names-\(UUID().uuidString)"), fallback: try JSONSerialization.data(withJSONObject: ["fingerprints": items]))
        configure(&configuration)
        return try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: ManualClock.inValidPeriod())
    }

    @Test(arguments: ["star-only", "partial-star"])
    func aWildcardWithoutAParentDomainIsRefusedEvenInReportOnlyMode(_ leaf: String) throws {
        // swift-nio-ssl matches `*` (and `pay*`) against one-label hosts such as `payments`,
        // which is pinned to another certificate.
        let store = try Self.store { $0.enforcement = .reportOnly }
        let decision = store.leafDecision(leaf: try StoreFixtures.der(leaf), peerAddress: LeafPeer.notInLeaf)
        guard let error = decision.failure?.reason.chainValidationError else {
            Issue.record("expected a refusal, got \(decision)")
            return
        }
        #expect(error.reason == .hostnameMismatch)
    }

    @Test func theChainAwareDecisionRefusesTheSameLeafForAOneLabelHost() throws {
        // What the leaf view must not be more permissive than: `payments` is pinned to localhost.pem.
        let store = try Self.store()
        let chain = try TestResources.chainDER("pki/star-only-chain.pem")
        #expect(store.pinDecision(host: "payments", validatedChain: chain).failure?.reason == .pinMismatch)
    }

    @Test func theMadeUpHostUnderAWildcardIsReportedAsTheWildcard() throws {
        // No pin covers hosts under *.pinstore.test: the failure names the wildcard, not the
        // label made up to stand for them.
        let store = try Self.store()
        let failure = store.leafDecision(leaf: try StoreFixtures.der("wildcard"), peerAddress: LeafPeer.notInLeaf).failure
        #expect(failure?.reason == .noPinsForHost(updateResult: nil))
        #expect(failure?.host == "*.pinstore.test")
    }
}
