import Foundation
import MetricsTestKit
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// Updates after a refusal: a rotation nobody announced is picked up, an impostor is not, and
/// neither can make the store hammer the list server.
@Suite struct UpdateAfterRefusalTests {
    static let anchors: TrustRoots = .anchors([try! TestResources.certificate("pki/root-ca.pem")])

    @Test func aMismatchUpdatesOnceAndAcceptsTheRotatedCertificate() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        // Emergency rotation: the list now pins only the new certificate.
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! SignedLists.staticList(["attacker"])) }
        let evaluator = PinningEvaluator(store: store, trustRoots: Self.anchors)
        let decision = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now)
        #expect(decision.isAllowed)
        #expect(fetcher.requestCount == 2)
    }

    @Test func aRefusalDecidedBeforeAListArrivedDownloadsNothingMore() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        // A connection decided "no pins" under the empty store; meanwhile a download ended.
        let decidedUnder = store.listGeneration
        #expect(await store.update() == .ok)
        #expect(await store.updateAfterRefusal(decidedUnder: decidedUnder) == .ok)
        #expect(fetcher.requestCount == 1)
    }

    @Test func theUpdateAfterARefusalLooksAgainBeforeDownloading() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        // The first decision (no pins) was made before this download ended.
        #expect(await store.update() == .ok)
        let chain = try TestResources.chainDER("pki/localhost-chain.pem")
        let pending = PendingPinningDecision(store: store, decide: { store.pinDecision(host: "localhost", validatedChain: chain) },
                                             report: { _ in })
        let decision = await pending.decideAfterUpdate()
        #expect(decision.isAllowed)
        #expect(fetcher.requestCount == 1)
    }

    @Test func aMismatchWithUpdateOnMismatchOffDownloadsNothing() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        let evaluator = PinningEvaluator(store: store, trustRoots: Self.anchors, updateOnMismatch: false)
        let decision = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now)
        #expect(decision.failure?.reason == .pinMismatch)
        #expect(fetcher.requestCount == 1)
    }

    @Test func aHundredConcurrentImpostorsCauseAtMostOneDownload() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]), delay: .milliseconds(20))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        let evaluator = PinningEvaluator(store: store, trustRoots: Self.anchors)
        let chain = try TestResources.chainDER("pki/attacker-chain.pem")
        let refused = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 {
                group.addTask { await evaluator.evaluate(host: "localhost", presentedChain: chain, at: ChainValidatorTests.now).failure?.reason == .pinMismatch }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(refused == 100)
        #expect(fetcher.requestCount == 2)
    }

    @Test func explicitUpdatesDoNotCountAgainstTheRefusalLimit() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(await store.update(mode: .forced) == .ok)
        // A rotation right after routine updates is still picked up.
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! SignedLists.staticList(["attacker"])) }
        let evaluator = PinningEvaluator(store: store, trustRoots: Self.anchors)
        #expect(await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now).isAllowed)
        #expect(fetcher.requestCount == 3)
    }

    @Test func theRefusalLimitOpensAgainAfterAMinute() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, clock: clock)
        #expect(await store.update() == .ok)
        #expect(await store.updateAfterRefusal() == .ok)
        clock.advance(59)
        #expect(await store.updateAfterRefusal() == nil)
        clock.advance(1)
        #expect(await store.updateAfterRefusal() == .ok)
        #expect(fetcher.requestCount == 3)
    }
}

/// What pinning does, seen from outside: swift-metrics and the decision stream.
@Suite struct PinStoreObservationTests {
    func store(metrics: TestMetrics, directory: TemporaryDirectory, fetcher: ScriptedFetcher) throws -> PinStore {
        try PinStore(configuration: StoreFixtures.configuration(directory: directory.url), fetcher: fetcher,
                     clock: ManualClock.inValidPeriod(), metricsFactory: metrics)
    }

    @Test func decisionsAreCountedByOutcomeAndReason() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let metrics = TestMetrics()
        let store = try store(metrics: metrics, directory: directory, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])))
        #expect(await store.update() == .ok)
        let evaluator = PinningEvaluator(store: store, trustRoots: UpdateAfterRefusalTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
        for _ in 0..<3 { _ = evaluator.evaluateNow(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"), at: ChainValidatorTests.now) }
        _ = evaluator.evaluateNow(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "127.0.0.1", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"), at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "localhost", presentedChain: try TestResources.chainDER("pki/rogue-leaf.pem"), at: ChainValidatorTests.now)
        func count(_ outcome: String, _ reason: String) -> Int64 {
            metrics.counterTotal(label: "pinstore_decisions_total", dimensions: [("store", "tests"), ("outcome", outcome), ("reason", reason)])
        }
        #expect(count("allowed", "pinned") == 3)
        #expect(count("denied", "pin_mismatch") == 1)
        #expect(count("denied", "no_pins_for_host") == 1)
        #expect(count("denied", "chain_not_trusted") == 1)
        #expect(count("denied", "host_not_expected") == 0)
    }

    @Test func decisionsCarryThePinnedHostAndEverythingElseAsOther() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let metrics = TestMetrics()
        let store = try store(metrics: metrics, directory: directory, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])))
        #expect(await store.update() == .ok)
        let evaluator = PinningEvaluator(store: store, trustRoots: UpdateAfterRefusalTests.anchors, updateOnEmpty: false, updateOnMismatch: false)
        _ = evaluator.evaluateNow(host: "LocalHost.", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now)
        // Hosts nothing pins by name: one label for all of them, however many there are.
        for index in 0..<20 {
            _ = evaluator.evaluateNow(host: "h\(index).unpinned.example", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"),
                                      at: ChainValidatorTests.now)
        }
        #expect(metrics.counterTotal(label: "pinstore_decisions_total", dimensions: [("host", "localhost"), ("reason", "pin_mismatch")]) == 1)
        #expect(metrics.counterTotal(label: "pinstore_decisions_total", dimensions: [("host", "other")]) == 20)
        let hosts = Set(metrics.counters(label: "pinstore_decisions_total").compactMap { $0.dimensions.first { $0.0 == "host" }?.1 })
        #expect(hosts == ["localhost", "other"])
    }

    @Test func aHostCoveredOnlyByAPolicyPatternIsCountedUnderThePattern() throws {
        let metrics = TestMetrics()
        let store = try PinPolicyTests.store(policies: [PinPolicyTests.policy(.caKey(spkiSHA256Base64: try PinPolicyTests.spki("intermediate-ca")),
                                                                              domain: "**.example.com")], metrics: metrics)
        _ = store.pinDecision(host: "a.b.example.com", validatedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
        #expect(store.metricsHost("a.b.example.com") == "**.example.com")
        #expect(store.metricsHost("example.net") == "other")
    }

    @Test func theNextPinExpiryIsAGaugeInSeconds() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let metrics = TestMetrics()
        let clock = ManualClock.inValidPeriod()
        let expires = Int64(clock.now().timeIntervalSince1970) + 30 * 86_400
        let list = try FingerprintListSigner(privateKey: StoreFixtures.signingKey())
            .staticList([try SignedLists.entry("localhost"), try SignedLists.entry("attacker", expires: expires)])
        let store = try PinStore(configuration: StoreFixtures.configuration(directory: directory.url), fetcher: ScriptedFetcher.serving(list),
                                 clock: clock, metricsFactory: metrics)
        #expect(await store.update() == .ok)
        #expect(try metrics.expectGauge("pinstore_next_pin_expiry_seconds", [("store", "tests")]).lastValue == Double(30 * 86_400))
    }

    @Test func updatesAreCountedByResultAndGaugesFollowTheList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let metrics = TestMetrics()
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost", "attacker"]))
        let store = try store(metrics: metrics, directory: directory, fetcher: fetcher)
        #expect(await store.update(mode: .forced) == .ok)
        fetcher.answer { _ throws(PinStoreError) in throw PinStoreError(.network, "down") }
        #expect(await store.update(mode: .forced) == .networkError)
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! StoreFixtures.list("static-invalid-signature.json")) }
        #expect(await store.update(mode: .forced) != .ok)
        #expect(metrics.counterTotal(label: "pinstore_updates_total", dimensions: [("store", "tests"), ("result", "ok")]) == 1)
        #expect(metrics.counterTotal(label: "pinstore_updates_total", dimensions: [("store", "tests"), ("result", "network_error")]) == 1)
        #expect(metrics.counterTotal(label: "pinstore_updates_total") == 3)
        #expect(try metrics.expectGauge("pinstore_valid_pins", [("store", "tests")]).lastValue == 2)
        #expect(try metrics.expectGauge("pinstore_list_age_seconds", [("store", "tests")]).lastValue == 0)
    }

    @Test func theDecisionStreamSeesEveryDecisionOnce() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]))
        let store = try store(metrics: TestMetrics(), directory: directory, fetcher: fetcher)
        #expect(await store.update() == .ok)
        let stream = store.decisions()
        // An update after the mismatch runs, yet the decision is reported once, as final.
        let evaluator = PinningEvaluator(store: store, trustRoots: UpdateAfterRefusalTests.anchors)
        _ = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"), at: ChainValidatorTests.now)
        _ = await evaluator.evaluate(host: "localhost", presentedChain: try TestResources.chainDER("pki/attacker-chain.pem"), at: ChainValidatorTests.now)
        _ = evaluator.evaluateNow(host: "127.0.0.1", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"), at: ChainValidatorTests.now)
        var seen: [(String, PinningFailure.Reason?)] = []
        for await event in stream {
            seen.append((event.host, event.decision.failure?.reason))
            if seen.count == 3 { break }
        }
        #expect(seen.map(\.0) == ["localhost", "localhost", "127.0.0.1"])
        #expect(seen[0].1 == nil)
        #expect(seen[1].1 == .pinMismatch)
        #expect(seen[2].1 == .noPinsForHost(updateResult: nil))
        #expect(fetcher.requestCount == 2)
    }

    @Test func everySubscriberGetsItsOwnCopy() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try store(metrics: TestMetrics(), directory: directory, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])))
        let first = store.decisions(), second = store.decisions()
        store.record(.deny(PinningFailure(host: "a", reason: .pinMismatch)), host: "a")
        var one = first.makeAsyncIterator(), two = second.makeAsyncIterator()
        #expect(await one.next()?.host == "a")
        #expect(await two.next()?.host == "a")
    }

    @Test func listChangeHandlersRunAfterEveryAppliedList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try store(metrics: TestMetrics(), directory: directory, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])))
        let calls = Locked(0)
        let token = store.addListChangeHandler { calls.withLock { $0 += 1 } }
        let generation = store.listGeneration
        #expect(await store.update(mode: .forced) == .ok)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(calls.withLock { $0 } == 2)
        #expect(store.listGeneration == generation + 2)
        store.removeListChangeHandler(token)
        #expect(await store.update(mode: .forced) == .ok)
        #expect(calls.withLock { $0 } == 2)
    }
}

/// Several processes (here: stores) sharing one storage directory.
@Suite struct SharedStorageTests {
    func configuration(_ directory: TemporaryDirectory) throws -> PinStore.Configuration {
        var configuration = try StoreFixtures.configuration(directory: directory.url, useChallenge: true)
        configuration.periodicUpdateInterval = 600
        return configuration
    }

    @Test func aDueStoreAdoptsTheNewerListAnotherStoreSaved() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let key = try StoreFixtures.signingKey()
        let fetcherA = ScriptedFetcher(ScriptedFetcher.challengeResponder(try SignedLists.challengeBody(["localhost"], timestamp: 100), key: key))
        let fetcherB = ScriptedFetcher(ScriptedFetcher.challengeResponder(try SignedLists.challengeBody(["attacker"], timestamp: 200), key: key))
        let a = try PinStore(configuration: configuration(directory), fetcher: fetcherA, clock: clock)
        let b = try PinStore(configuration: configuration(directory), fetcher: fetcherB, clock: clock)
        #expect(await a.update() == .ok)
        clock.advance(600)
        #expect(await b.update(mode: .forced) == .ok)
        // A's update is due: it finds B's newer list in the file and takes it, no download.
        _ = a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost"))
        try await waitUntil { a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .trusted }
        #expect(fetcherA.requestCount == 1)
        #expect(a.nextUpdateDate == b.nextUpdateDate)
    }

    @Test func aDueStoreNeverAdoptsAnOlderList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        let key = try StoreFixtures.signingKey()
        let fetcherA = ScriptedFetcher(ScriptedFetcher.challengeResponder(try SignedLists.challengeBody(["localhost"], timestamp: 300), key: key))
        let fetcherB = ScriptedFetcher(ScriptedFetcher.challengeResponder(try SignedLists.challengeBody(["attacker"], timestamp: 200), key: key))
        let a = try PinStore(configuration: configuration(directory), fetcher: fetcherA, clock: clock)
        let b = try PinStore(configuration: configuration(directory), fetcher: fetcherB, clock: clock)
        #expect(await b.update() == .ok)           // timestamp 200 in the file
        #expect(await a.update(mode: .forced) == .ok)  // A loaded nothing older: it has 300 (and wrote it)
        #expect(await b.update(mode: .forced) == .ok)  // B writes its 200 list again
        clock.advance(600)
        _ = a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost"))
        // A downloads instead of adopting the older file.
        try await waitUntil { fetcherA.requestCount == 2 }
        try await waitUntil { a.nextUpdateDate > clock.now() }
        #expect(a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .untrusted)
        #expect(a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }
}

extension SharedStorageTests {
    @Test func aDueStaticStoreNeverAdoptsAListDownloadedBeforeItsOwn() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.periodicUpdateInterval = 600
        // B downloads first (the old list, pinning localhost), A later (the new one).
        let b = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])), clock: clock)
        #expect(await b.update(mode: .forced) == .ok)
        let saved = try Data(contentsOf: configuration.storeFileURL)
        clock.advance(10)
        let fetcherA = ScriptedFetcher.serving(try SignedLists.staticList(["attacker"]))
        let a = try PinStore(configuration: configuration, fetcher: fetcherA, clock: clock)
        #expect(await a.update(mode: .forced) == .ok)
        // B's older file comes back (A's save was lost, or B wrote late) with a later date.
        var older = try JSONSerialization.jsonObject(with: saved) as! [String: Any]
        older["nextUpdate"] = clock.now().timeIntervalSince1970 + 5_000
        try JSONSerialization.data(withJSONObject: older).write(to: configuration.storeFileURL)
        clock.advance(600)
        _ = a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker"))
        // A downloads instead of adopting the older list: the removed pin stays removed.
        try await waitUntil { fetcherA.requestCount == 2 && a.nextUpdateDate > clock.now() }
        #expect(a.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .untrusted)
    }
}

@Suite struct PinStoreLifetimeTests {
    @Test(.timeLimit(.minutes(10)))
    func runEndsOnCancellationWhileADownloadHangs() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A list server that never answers (within this test): run() must not wait for it.
        let fetcher = ScriptedFetcher.serving(try SignedLists.staticList(["localhost"]), delay: .seconds(3_600))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        let run = Task { try await store.run() }
        try await waitUntil { fetcher.requestCount == 1 }
        run.cancel()
        try await run.value
    }

    @Test(.timeLimit(.minutes(10)))
    func decisionStreamsEndWhenTheStoreGoesAway() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        var store: PinStore? = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url)
        let stream = store!.decisions()
        store = nil
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }

    @Test func aDownloadedListIsNotScheduledAgainWithinAMinute() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let clock = ManualClock.inValidPeriod()
        // The only pin expires in 10 s: the list's own rule would ask again in about a second.
        let soon = Int64(clock.now().timeIntervalSince1970) + 10
        let list = try FingerprintListSigner(privateKey: StoreFixtures.signingKey()).staticList([try SignedLists.entry("localhost", expires: soon)])
        let store = try StoreFixtures.store(ScriptedFetcher.serving(list), directory: directory.url, clock: clock)
        #expect(await store.update() == .ok)
        #expect(store.nextUpdateDate == clock.now() + 60)
    }
}

/// Findings of the security review that live in the store's update path.
@Suite struct StoreRollbackAndSaveTests {
    @Test func aChallengeBodyWithoutTimestampCannotEraseTheRollbackFloor() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let key = try StoreFixtures.signingKey()
        let fetcher = ScriptedFetcher(ScriptedFetcher.challengeResponder(try SignedLists.challengeBody(["localhost"], timestamp: 500), key: key))
        let store = try StoreFixtures.store(fetcher, directory: directory.url, useChallenge: true)
        #expect(await store.update() == .ok)
        let before = try Data(contentsOf: store.configuration.storeFileURL)
        let noTimestamp = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(SHA256Digest.hash(try StoreFixtures.der("attacker")).base64EncodedString())","expires":4102444799}]}"#
        fetcher.answer(ScriptedFetcher.challengeResponder(Data(noTimestamp.utf8), key: key))
        let report = await store.updateWithReport(mode: .forced)
        #expect(report.result == .invalidData)
        #expect(report.error?.reason.contains("no timestamp") == true)
        #expect(try Data(contentsOf: store.configuration.storeFileURL) == before)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .untrusted)
    }

    @Test func aStaticStoreFileDoesNotLoadIntoAChallengeModeStore() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let staticStore = try StoreFixtures.store(ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])), directory: directory.url)
        #expect(await staticStore.update() == .ok)
        let challengeStore = try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url, useChallenge: true)
        #expect(challengeStore.storedEntries.isEmpty)
        #expect(challengeStore.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func aFailedSaveIsReportedAndCountedWhileTheListStaysInForce() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A storage "directory" below a regular file: every write fails with ENOTDIR.
        let blocker = directory.url.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        var configuration = try StoreFixtures.configuration(directory: blocker.appendingPathComponent("store"))
        configuration.identifier = "tests"
        let metrics = TestMetrics()
        let store = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(try SignedLists.staticList(["localhost"])),
                                 clock: ManualClock.inValidPeriod(), metricsFactory: metrics)
        let report = await store.updateWithReport()
        #expect(report.result == .ok)
        #expect(report.saveError?.code == .storage)
        #expect(metrics.counterTotal(label: "pinstore_list_save_failures_total") == 1)
        #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }
}
