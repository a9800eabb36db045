import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// The server's per-domain switch (`domainsConfig`): honoured from challenge-mode responses only,
/// over fixture chains validated against the test root. `127.0.0.1` is one of the localhost
/// fixture's names that no list here pins.
@Suite struct DomainsConfigTests {
    static let now = ChainValidatorTests.now
    static let timestamp: Int64 = 1_893_456_000
    /// Unlisted hosts need no pins; `localhost` does.
    static let exempting = #"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "localhost", "sslPinningRequired": true}]}"#

    /// `body` with a leading `domainsConfig` member.
    static func inserting(_ config: String, into body: Data) -> Data {
        var text = String(decoding: body, as: UTF8.self)
        let brace = text.firstIndex(of: "{")!
        text.replaceSubrange(brace...brace, with: "{\"domainsConfig\": \(config), ")
        return Data(text.utf8)
    }

    static func challengeBody(_ config: String?, timestamp: Int64 = timestamp) throws -> Data {
        let body = try SignedLists.challengeBody(["localhost"], timestamp: timestamp)
        return config.map { inserting($0, into: body) } ?? body
    }

    static func challengeStore(_ fetcher: ScriptedFetcher, directory: TemporaryDirectory) throws -> PinStore {
        try StoreFixtures.store(fetcher, directory: directory.url, useChallenge: true)
    }

    static func decide(_ store: PinStore, _ chain: String = "localhost-chain", host: String = "127.0.0.1") throws -> PinningDecision {
        PinningEvaluator(store: store, trustRoots: PinPolicyTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
            .evaluateNow(host: host, presentedChain: try TestResources.chainDER("pki/\(chain).pem"), at: now)
    }

    // MARK: - Honoured from challenge mode

    @Test func challengeResponseLetsAnUnpinnedHostTheServerExemptsThrough() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let key = try StoreFixtures.signingKey()
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(Self.exempting), key: key)), directory: directory)
        #expect(await store.update() == .ok)
        guard case .allow = try Self.decide(store) else {
            Issue.record("expected 127.0.0.1 (unlisted, no pins) to be allowed")
            return
        }
    }

    @Test func aHostTheServerExemptsIsStillCheckedAgainstItsPins() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let config = #"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "localhost", "sslPinningRequired": false}]}"#
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(config), key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store, "attacker-chain", host: "localhost").failure?.reason == .pinMismatch)
    }

    @Test func aHostTheServerRequiresStaysRefusedWithoutPins() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let config = #"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "127.0.0.1", "sslPinningRequired": true}]}"#
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(config), key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func unlistedHostsNeedPinsWhenTheServerDoesNotSayOtherwise() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let config = #"{"domains": [{"name": "other.pinstore.test", "sslPinningRequired": false}]}"#
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(config), key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func expectedHostsStillApplyToAHostTheServerExempts() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(Self.exempting), key: try StoreFixtures.signingKey()))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, useChallenge: true, expectedCommonNames: ["localhost"])
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store).failure?.reason == .hostNotExpected)
    }

    @Test func leafRuleLetsALeafThroughWhenEveryNameItServesIsExempt() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // The list pins another name; the server exempts every unlisted host.
        let body = Self.inserting(#"{"sslPinningRequiredForUnlisted": false}"#, into: try FingerprintListSigner.challengeModeBody(
            [SignedLists.entry("localhost", name: "other.pinstore.test")], timestamp: Self.timestamp))
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        #expect(store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: LeafPeer.notInLeaf).isAllowed)
    }

    @Test func leafRuleRefusesALeafWhoseAddressNameIsThePeerEvenWhenUnlistedHostsAreExempt() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // swift-nio-ssl accepts a leaf naming the peer's address for any requested host, a
        // required one included: the leaf view cannot exempt it.
        let body = Self.inserting(#"{"sslPinningRequiredForUnlisted": false}"#, into: try FingerprintListSigner.challengeModeBody(
            [SignedLists.entry("localhost", name: "other.pinstore.test")], timestamp: Self.timestamp))
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        let decision = store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: "127.0.0.1")
        guard let error = decision.failure?.reason.chainValidationError else {
            Issue.record("expected a refusal of the address name, got \(decision)")
            return
        }
        #expect(error.reason == .hostnameMismatch)
    }

    @Test func leafRuleRefusesALeafWhoseNamesIncludeARequiredHost() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let body = Self.inserting(#"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "localhost", "sslPinningRequired": true}]}"#,
                                  into: try FingerprintListSigner.challengeModeBody([SignedLists.entry("localhost", name: "other.pinstore.test")], timestamp: Self.timestamp))
        let store = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await store.update() == .ok)
        #expect(store.leafDecision(leaf: try StoreFixtures.der("localhost"), peerAddress: LeafPeer.notInLeaf).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Ignored where unsigned

    @Test func staticListCarryingDomainsConfigIsHonouredForPinsButTheSwitchIsIgnored() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // Per-entry signatures still verify: they never covered the member.
        let body = Self.inserting(Self.exempting, into: try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(ScriptedFetcher.serving(body), directory: directory.url)
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store, host: "localhost").isAllowed)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func staticListWithAWholeListSignatureCoveringDomainsConfigStillIgnoresIt() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let signed = try FingerprintListSigner(privateKey: StoreFixtures.signingKey())
            .staticList([SignedLists.entry("localhost")], timestamp: Self.timestamp)
        var text = String(decoding: signed, as: UTF8.self)
        let member = try #require(text.range(of: #""listSignature": "[^"]*""#, options: .regularExpression))
        text.replaceSubrange(member, with: #""listSignature": "", "domainsConfig": "# + Self.exempting)
        let body = try WholeListSignature.sign(Data(text.utf8), with: StoreFixtures.signingKey())
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.requireListSignature = true
        let store = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(body), clock: ManualClock.inValidPeriod())
        #expect(await store.update() == .ok)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    @Test func fallbackDataCarryingDomainsConfigIsIgnored() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fallback = Self.inserting(Self.exempting, into: try TestResources.fixture("lists/static-good.json"))
        let store = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url, useChallenge: true, fallback: fallback)
        #expect(try Self.decide(store, host: "localhost").isAllowed)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Persistence and tampering

    @Test func theSwitchSurvivesARestartFromTheStoreFile() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let first = try Self.challengeStore(ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(Self.exempting), key: try StoreFixtures.signingKey())), directory: directory)
        #expect(await first.update() == .ok)
        let offline = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "offline") }
        let restarted = try Self.challengeStore(offline, directory: directory)
        #expect(try Self.decide(restarted).isAllowed)
        #expect(offline.requestCount == 0)
    }

    @Test func tamperedChallengeResponseCarryingDomainsConfigIsRefusedAndChangesNothing() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let key = try StoreFixtures.signingKey()
        let fetcher = ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(nil), key: key))
        let store = try Self.challengeStore(fetcher, directory: directory)
        #expect(await store.update() == .ok)
        let fileBefore = try Data(contentsOf: store.configuration.storeFileURL)
        // Signed as the server sent it, then the switch added on the way.
        let genuine = try Self.challengeBody(nil, timestamp: Self.timestamp + 60)
        fetcher.answer { request throws(PinStoreError) in
            var response = try ScriptedFetcher.challengeResponder(genuine, key: key)(request)
            response = FingerprintListResponse(statusCode: 200, headers: response.headers, body: Self.inserting(Self.exempting, into: genuine))
            return response
        }
        #expect(await store.update(mode: .forced) == .invalidSignature)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
        #expect(try Data(contentsOf: store.configuration.storeFileURL) == fileBefore)
    }

    @Test func malformedDomainsConfigInASignedResponseIsRefusedAndChangesNothing() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let key = try StoreFixtures.signingKey()
        let fetcher = ScriptedFetcher(ScriptedFetcher.challengeResponder(try Self.challengeBody(nil), key: key))
        let store = try Self.challengeStore(fetcher, directory: directory)
        #expect(await store.update() == .ok)
        let bad = try Self.challengeBody(#"{"sslPinningRequiredForUnlisted": false, "domains": [{"name": "127.0.0.1"}]}"#, timestamp: Self.timestamp + 60)
        fetcher.answer(ScriptedFetcher.challengeResponder(bad, key: key))
        #expect(await store.update(mode: .forced) == .invalidData)
        #expect(try Self.decide(store).failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Name matching

    @Test func namesMatchExactlyAfterNormalization() throws {
        let config = try #require(try DomainsConfig(challengeBody: Data(#"""
            {"fingerprints": [], "domainsConfig": {"sslPinningRequiredForUnlisted": true,
             "domains": [{"name": "API.Example.COM.", "sslPinningRequired": false},
                         {"name": "*.cdn.example.com", "sslPinningRequired": false}]}}
            """#.utf8)))
        #expect(!config.pinningRequired(for: "api.example.com"))
        #expect(config.pinningRequired(for: "www.api.example.com"))
        #expect(config.pinningRequired(for: "example.com"))
        #expect(config.pinningRequired(for: "img.cdn.example.com"))
    }

    @Test func aNameListedTwiceIsRequiredIfEitherEntrySaysSo() throws {
        let config = try #require(try DomainsConfig(challengeBody: Data(#"""
            {"domainsConfig": {"sslPinningRequiredForUnlisted": false,
             "domains": [{"name": "api.example.com", "sslPinningRequired": false},
                         {"name": "api.example.com", "sslPinningRequired": true}]}}
            """#.utf8)))
        #expect(config.pinningRequired(for: "api.example.com"))
    }

    @Test func aBodyWithoutTheMemberHasNoSwitch() throws {
        #expect(try DomainsConfig(challengeBody: Data(#"{"fingerprints": []}"#.utf8)) == nil)
    }

    @Test func aDomainThatIsNotAHostNameIsRefused() {
        #expect(throws: PinStoreError.self) {
            _ = try DomainsConfig(challengeBody: Data(#"{"domainsConfig": {"domains": [{"name": "a..b", "sslPinningRequired": false}]}}"#.utf8))
        }
    }
}
