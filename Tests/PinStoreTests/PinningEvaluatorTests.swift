import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// The decision every adapter uses, over fixture chains (no network).
@Suite struct PinningEvaluatorTests {
    let anchors: TrustRoots

    init() throws {
        anchors = .anchors([try TestResources.certificate("pki/root-ca.pem")])
    }

    /// A store whose only pins are `fallback` (a static-format list; fallback signatures are not checked).
    static func store(fallback: Data?, expectedCommonNames: [String]? = nil,
                      serviceURL: String = "http://127.0.0.1:1/unused") throws -> PinStore {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-evaluator-\(UUID().uuidString)")
        return try PinStore(configuration: .init(
            serviceURL: URL(string: serviceURL)!,
            publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
            expectedCommonNames: expectedCommonNames,
            fallbackData: fallback,
            storageDirectory: directory,
            requestTimeout: HangGuard.seconds))
    }

    /// A one-entry list pinning `certificate` (a PEM fixture) for `name` at `depth`.
    static func list(pinning certificate: String, for name: String = "localhost", depth: Int = 0) throws -> Data {
        let fingerprint = try TestResources.certificate(certificate).fingerprintBase64
        return Data(#"{"fingerprints":[{"name":"\#(name)","fingerprint":"\#(fingerprint)","expires":4102444799,"depth":\#(depth)}]}"#.utf8)
    }

    func evaluator(_ store: PinStore, updateOnEmpty: Bool = false) -> PinningEvaluator {
        PinningEvaluator(store: store, trustRoots: anchors, updateOnEmpty: updateOnEmpty)
    }

    @Test func pinnedLeafIsAllowedWithTheValidatedChain() async throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        guard case .allow(let chain) = decision else {
            Issue.record("expected allow, got \(decision)")
            return
        }
        #expect(try chain.map { try X509Certificate(derRepresentation: $0).commonName } == ["localhost", "PinStore Test Intermediate CA", "PinStore Test Root CA"])
    }

    @Test func attackerCertificateChainedToTheTrustedCAIsAPinMismatch() async throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"))
        #expect(decision.failure?.reason == .pinMismatch)
    }

    @Test func intermediatePinnedAtDepthOneIsAllowed() async throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-depth.json"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.isAllowed)
    }

    @Test func intermediatePinnedAtDepthOneDoesNotMatchTheLeaf() async throws {
        // The intermediate's fingerprint pinned at depth 0 must not match a chain whose leaf differs.
        let store = try Self.store(fallback: Self.list(pinning: "pki/intermediate-ca.pem", depth: 0))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.failure?.reason == .pinMismatch)
    }

    @Test func pinnedButExpiredIsNotTrusted() async throws {
        let store = try Self.store(fallback: Self.list(pinning: "pki/expired.pem"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/expired.pem", "pki/intermediate-ca.pem"))
        guard let error = decision.failure?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(decision)")
            return
        }
        #expect(error.reason == .expired)
    }

    @Test func pinnedButForAnotherHostIsNotTrusted() async throws {
        let store = try Self.store(fallback: Self.list(pinning: "pki/wrong-host.pem"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/wrong-host.pem", "pki/intermediate-ca.pem"))
        guard let error = decision.failure?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(decision)")
            return
        }
        #expect(error.reason == .hostnameMismatch)
    }

    @Test func pinnedButSelfSignedWithoutAnAnchorIsNotTrusted() async throws {
        let store = try Self.store(fallback: Self.list(pinning: "pki/self-signed.pem"))
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/self-signed.pem"))
        guard let error = decision.failure?.reason.chainValidationError else {
            Issue.record("expected chainNotTrusted, got \(decision)")
            return
        }
        #expect(error.reason == .untrustedSelfSigned)
    }

    @Test func emptyStoreDeniesWithNoPinsForHost() async throws {
        let store = try Self.store(fallback: nil)
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func hostWithoutPinsIsDeniedEvenWhenTheChainIsValid() async throws {
        // The fixture leaf is valid for 127.0.0.1 too, but the list pins only names.
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"))
        let decision = await evaluator(store).evaluate(host: "127.0.0.1", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func hostOutsideExpectedCommonNamesIsDenied() async throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"), expectedCommonNames: ["api.pinstore.test"])
        let decision = await evaluator(store).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.failure?.reason == .hostNotExpected)
    }

    @Test func updateOnEmptyReportsTheFailedUpdate() async throws {
        // Port 1 on loopback: nothing listens, the forced update fails fast.
        let store = try Self.store(fallback: nil)
        let decision = await evaluator(store, updateOnEmpty: true).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.failure?.reason == .noPinsForHost(updateResult: .networkError))
    }

    @Test func untrustedChainIsDeniedBeforeAnyUpdate() async throws {
        // updateOnEmpty must not turn a chain failure into an update (nor into trust).
        let store = try Self.store(fallback: nil)
        let decision = await evaluator(store, updateOnEmpty: true).evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/rogue-leaf.pem"))
        guard case .chainNotTrusted = decision.failure?.reason else {
            Issue.record("expected chainNotTrusted, got \(decision)")
            return
        }
    }

    @Test func evaluateNowMatchesTheAsyncDecisionWithoutUpdating() throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"))
        let chain = try TestResources.chainDER("pki/localhost-chain.pem")
        #expect(evaluator(store, updateOnEmpty: true).evaluateNow(host: "localhost", presentedChain: chain).isAllowed)
        #expect(evaluator(store, updateOnEmpty: true).evaluateNow(host: "127.0.0.1", presentedChain: chain).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func hostNameMatchingIgnoresCaseAndTrailingDot() async throws {
        let store = try Self.store(fallback: TestResources.fixture("lists/static-good.json"))
        let decision = await evaluator(store).evaluate(host: "LocalHost.", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(decision.isAllowed)
    }

    @Test func failureDescriptionNamesTheHostAndWhatToDo() {
        let failure = PinningFailure(host: "api.example.com", reason: .pinMismatch)
        #expect(failure.description.contains("api.example.com"))
        #expect(failure.description.contains("publish"))
        let empty = PinningFailure(host: "api.example.com", reason: .noPinsForHost(updateResult: .networkError))
        #expect(empty.description.contains("networkError"))
    }
}

@Suite struct PinningEvaluatorUpdateOnEmptyTests {
    @Test func updateOnEmptyDownloadsOnceThenAcceptsTheNewlyPinnedHost() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        let evaluator = PinningEvaluator(store: store, trustRoots: .anchors([try TestResources.certificate("pki/root-ca.pem")]), updateOnEmpty: true)
        let decision = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"), at: ChainValidatorTests.now)
        #expect(decision.isAllowed)
        #expect(fetcher.requestCount == 1)
    }

    @Test func connectionsToUnpinnedHostsTriggerAtMostOneDownloadAMinute() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // The list pins nothing for 127.0.0.1, so every connection there finds no pins.
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        let evaluator = PinningEvaluator(store: store, trustRoots: .anchors([try TestResources.certificate("pki/root-ca.pem")]), updateOnEmpty: true)
        let chain = try TestResources.chainDER("pki/localhost-chain.pem")
        for _ in 0..<5 {
            let decision = await evaluator.evaluate(host: "127.0.0.1", presentedChain: chain, at: ChainValidatorTests.now)
            #expect(!decision.isAllowed)
        }
        // One scheduled download (the store had never downloaded: the first validate starts
        // it, and the first refusal joins it for free) and one on behalf of refusals; the
        // other refusals of the minute download nothing.
        #expect(fetcher.requestCount == 2)
    }
}
