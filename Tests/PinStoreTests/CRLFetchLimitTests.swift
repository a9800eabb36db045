import Foundation
import PinStoreTesting
import PinStoreTestSupport
import Testing
@testable import PinStore

/// What a hostile chain's CRL distribution points can make a store do: whoever issued the chain
/// (a partner's private CA is enough) chooses them. Counted at the CRL server on 127.0.0.1,
/// never timed: the distribution points read per certificate, the downloads held open at once,
/// a redirect that would aim the request elsewhere, and a handshake that is decided while
/// downloads still hang.
@Suite struct CRLFetchLimitTests {
    static func store(directory: TemporaryDirectory, pki: TestPKI, leaves: [TestIdentity], budget: TimeInterval = 0.5,
                      requestTimeout: TimeInterval = 120) throws -> PinStore {
        var configuration = PinStore.Configuration(serviceURL: try #require(URL(string: "https://127.0.0.1:1/list.json")),
                                                   publicKey: try TestListSigningKey().publicKeyBase64,
                                                   storageDirectory: directory.url, requestTimeout: requestTimeout)
        configuration.crlMode = .enforceHardFail
        configuration.crlFetchBudget = budget
        configuration.policies = [PinPolicy(domain: "localhost", pins: leaves.map { .certificate(sha256Base64: $0.certificate.fingerprintBase64) }
                                                + [.certificate(sha256Base64: pki.impostor.certificate.fingerprintBase64)])]
        return try PinStore(configuration: configuration)
    }

    static func subject(_ identity: TestIdentity) throws -> CRLSubject {
        let der = identity.certificate.derRepresentation
        return try #require(CRLSubject.of(der, fingerprint: Digest32(SHA256Digest.hash(der))!))
    }

    @Test func aCertificateIsReadForItsFirstDistinctDistributionPointsOnly() throws {
        let base = try #require(URL(string: "http://127.0.0.1:9"))
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: base)
        let points = (0..<1_000).map { base.appendingPathComponent("dp-\($0).crl") }
        let many = try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: points)
        #expect(try Self.subject(many).urls == Array(points.prefix(CRLSubject.maximumDistributionPoints)))
        let repeated = try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: [points[0], points[0], points[1]])
        #expect(try Self.subject(repeated).urls == [points[0], points[1]])
    }

    @Test(.timeLimit(.minutes(10)))
    func hostileDistributionPointsGetAtMostTheCapsAndTheHandshakeIsDecidedWhileTheyHang() async throws {
        let crls = try await TestCRLServer.start()
        defer { Task { try? await crls.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        crls.serve(.crl(try pki.crl(by: .root)), at: "root.crl")
        // Two leaves of a thousand distribution points each, every one hanging for an hour.
        let first = (0..<1_000).map { crls.baseURL.appendingPathComponent("a-\($0).crl") }
        let second = (0..<1_000).map { crls.baseURL.appendingPathComponent("b-\($0).crl") }
        for url in first + second { crls.serve(.hang, at: url.lastPathComponent) }
        let leaves = [try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: first),
                      try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: second)]
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(directory: directory, pki: pki, leaves: leaves)
        let evaluator = PinningEvaluator(store: store, trustRoots: pki.trustRoots, updateOnEmpty: false, updateOnMismatch: false)
        for (leaf, points) in zip(leaves, [first, second]) {
            let decision = await evaluator.evaluate(host: "localhost", presentedChain: leaf.chainDER)
            // Refused under hard-fail because the CRL was not had within the budget...
            #expect(decision.failure?.reason.crlCheckFailure?.unavailable?.code == .notFetchedYet, "\(decision)")
            // ...while no download of its points had ended (they hang for an hour, and the
            // store's deadline for each is two minutes; an ended one leaves an entry): the
            // budget, not a download, ended the wait, whether the downloads ran or waited a turn.
            #expect(points.allSatisfy { store.crl.entry(for: $0.absoluteString) == nil })
        }
        let cap = CRLChecker.maximumConcurrentFetches
        // Each leaf's first points and the intermediate's one are all the store asked for.
        let pending = store.crl.pendingFetchCount
        #expect(pending <= 2 * CRLSubject.maximumDistributionPoints + 1)
        // Once every download the store started has reached its turn or its place in the
        // queue, and every running one has reached the server, the server holds the cap
        // and has never held more.
        try await DownloadDeadlineTests.eventually {
            store.crl.limiter.running + store.crl.limiter.waiting >= store.crl.pendingFetchCount
                && crls.openRequestCount >= store.crl.limiter.running
        }
        #expect(store.crl.limiter.running == cap)
        #expect(crls.openRequestCount == cap)
        #expect(crls.maximumConcurrentRequests <= cap)
        // Only the first points of each leaf were ever asked for.
        let asked = (first + second).filter { crls.requestCount(for: $0.lastPathComponent) > 0 }
        #expect(asked.count <= cap)
        let readable = Set((first.prefix(CRLSubject.maximumDistributionPoints) + second.prefix(CRLSubject.maximumDistributionPoints)).map(\.lastPathComponent))
        #expect(asked.allSatisfy { readable.contains($0.lastPathComponent) })
        #expect((first + second).reduce(0) { $0 + crls.requestCount(for: $1.lastPathComponent) } == asked.count)
    }

    // MARK: Redirects

    static func load(_ url: URL, pki: TestPKI, store: PinStore) async -> CRLChecker.Entry? {
        await store.crl.load(url: url, issuer: pki.intermediate.derRepresentation,
                             issuerKey: Digest32(SHA256Digest.hash(pki.intermediate.subjectPublicKeyInfo))!)
        return store.crl.entry(for: url.absoluteString)
    }

    @Test(.timeLimit(.minutes(10)))
    func aCRLRedirectToAnotherPortIsNotFollowed() async throws {
        let crls = try await TestCRLServer.start()
        let elsewhere = try await TestCRLServer.start()
        defer { Task { try? await crls.shutdown(); try? await elsewhere.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        // The target would even serve the right CRL: the request must not reach it at all.
        elsewhere.serve(.crl(try pki.crl(by: .intermediate)), at: "intermediate.crl")
        crls.serveRedirect(to: elsewhere.baseURL.appendingPathComponent("intermediate.crl"), at: "intermediate.crl")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(directory: directory, pki: pki, leaves: [pki.leaf], requestTimeout: 30)
        let entry = await Self.load(try #require(pki.intermediateCRLURL), pki: pki, store: store)
        #expect(entry?.crl == nil)
        #expect(entry?.failure?.code == .fetchFailed, "\(String(describing: entry?.failure))")
        #expect(entry?.failure?.detail.contains("same scheme, host and port") == true, "\(String(describing: entry?.failure))")
        #expect(crls.requestCount(for: "intermediate.crl") == 1)
        #expect(elsewhere.totalRequestCount == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aCRLRedirectWithinTheDistributionPointsOriginIsFollowed() async throws {
        let crls = try await TestCRLServer.start()
        defer { Task { try? await crls.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        crls.serve(.crl(try pki.crl(by: .intermediate)), at: "2026/intermediate.crl")
        crls.serveRedirect(to: crls.baseURL.appendingPathComponent("2026/intermediate.crl"), at: "intermediate.crl")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(directory: directory, pki: pki, leaves: [pki.leaf], requestTimeout: 30)
        let entry = await Self.load(try #require(pki.intermediateCRLURL), pki: pki, store: store)
        #expect(entry?.crl != nil, "\(String(describing: entry?.failure))")
        #expect(crls.requestCount(for: "2026/intermediate.crl") == 1)
    }

    @Test(.timeLimit(.minutes(10)))
    func aCRLRedirectLoopWithinTheOriginStopsAfterFiveRedirects() async throws {
        let crls = try await TestCRLServer.start()
        defer { Task { try? await crls.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        crls.serveRedirect(to: crls.baseURL.appendingPathComponent("loop.crl"), at: "intermediate.crl")
        crls.serveRedirect(to: crls.baseURL.appendingPathComponent("intermediate.crl"), at: "loop.crl")
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try Self.store(directory: directory, pki: pki, leaves: [pki.leaf], requestTimeout: 30)
        let entry = await Self.load(try #require(pki.intermediateCRLURL), pki: pki, store: store)
        #expect(entry?.failure?.code == .fetchFailed, "\(String(describing: entry?.failure))")
        #expect(crls.totalRequestCount == DownloadRedirectRule.maximumRedirects + 1)
    }

    // MARK: The rule and the limiter, without sockets

    static func crlRequest(_ text: String) throws -> FingerprintListRequest {
        var request = FingerprintListRequest(url: try #require(URL(string: text)), document: "CRL")
        request.allowsPlainHTTP = true
        request.redirectsStayOnOrigin = true
        return request
    }

    @Test(arguments: [
        ("http://ca.example/crl", "http://ca.example/2026/crl", true),
        ("http://ca.example/crl", "http://CA.example:80/other", true),
        ("http://ca.example:8080/crl", "http://ca.example:8080/x", true),
        ("http://ca.example/crl", "http://ca.example:8080/crl", false),
        ("http://ca.example/crl", "http://other.example/crl", false),
        ("http://ca.example/crl", "https://ca.example/crl", false),
        ("http://ca.example/crl", "http://169.254.169.254/latest/meta-data/", false),
        ("http://ca.example/crl", "file:///etc/passwd", false),
    ])
    func aCRLRedirectIsFollowedOnlyWithinTheOrigin(_ from: String, _ to: String, _ followed: Bool) throws {
        let refusal = DownloadRedirectRule.refusal(of: URL(string: to), for: try Self.crlRequest(from), followed: 0)
        #expect((refusal == nil) == followed, "\(String(describing: refusal))")
    }

    @Test func aListRedirectMayChangeHostButNotLeaveHTTPS() throws {
        let request = FingerprintListRequest(url: try #require(URL(string: "https://pins.example/list.json")))
        #expect(DownloadRedirectRule.refusal(of: URL(string: "https://cdn.example/list.json"), for: request, followed: 0) == nil)
        #expect(DownloadRedirectRule.refusal(of: URL(string: "http://cdn.example/list.json"), for: request, followed: 0) != nil)
        #expect(DownloadRedirectRule.refusal(of: URL(string: "https://cdn.example/list.json"), for: request,
                                             followed: DownloadRedirectRule.maximumRedirects) != nil)
    }

    @Test(.timeLimit(.minutes(10)))
    func theLimiterRunsAtMostItsLimitAtOnceAndServesEveryone() async throws {
        let limiter = CRLFetchLimiter(limit: 3)
        let inside = Locked((now: 0, most: 0))
        await withTaskGroup(of: Int?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    await limiter.withTurn { () async -> Int in
                        inside.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                        try? await Task.sleep(for: .milliseconds(5))
                        inside.withLock { $0.now -= 1 }
                        return index
                    }
                }
            }
            var served = 0
            for await result in group where result != nil { served += 1 }
            #expect(served == 20)
        }
        #expect(inside.withLock { $0.most } <= 3)
        #expect(limiter.running == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func aWaiterCancelledBeforeItsTurnRunsNothing() async throws {
        let limiter = CRLFetchLimiter(limit: 1)
        let release = AsyncStream<Void>.makeStream()
        let holder = Task { await limiter.withTurn { () async -> Bool in for await _ in release.stream { break }; return true } }
        try await DownloadDeadlineTests.eventually { limiter.running == 1 }
        let ran = Locked(false)
        let waiter = Task { await limiter.withTurn { () async -> Bool in ran.withLock { $0 = true }; return true } }
        waiter.cancel()
        #expect(await waiter.value == nil)
        release.continuation.yield()
        #expect(await holder.value == true)
        #expect(!ran.withLock { $0 })
        #expect(limiter.running == 0)
    }
}
