import Foundation
import Testing
import Logging
import MetricsTestKit
import PinStore
import PinStoreDevServer
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// The rotation loop as a fleet lives it, in real time and with real parts only: TLS servers on
/// 127.0.0.1 (the partner before and after an unannounced swap to a new key from the same CA, and
/// an impostor), three vantage points (`Publisher.run()`, the real TLS prober, threshold 2, one
/// real proposals folder, the default intervals) each with its report endpoint, a list server
/// with ETag and 304 over the honest vantage point's output folder, and stores running `run()`
/// with `reportURI` at an endpoint, each deciding one real handshake a second through
/// `PinningEvaluator` (a refusal updates the list, as deployed clients do).
///
/// It asserts what happens, never how long it takes: every wait polls for its event, with limits
/// of minutes that only a broken loop reaches. (The time is the benchmark's business:
/// `swift run -c release --package-path Benchmarks rotation-loop`.)
@Suite(.serialized, .timeLimit(.minutes(15))) struct RotationLoopEndToEndTests {
    static let host = EndToEndFixture.host
    static let stores = 10

    /// A list-server fetcher that is URLSessionListFetcher, counting its answers.
    final class CountingFetcher: FingerprintListFetcher {
        private let inner = URLSessionListFetcher()
        let statuses = Locked<[Int]>([])

        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            let response = try await inner.fetch(request)
            statuses.withLock { $0.append(response.statusCode) }
            return response
        }
    }

    /// One store of the fleet and the decisions of its requests (request start, allowed).
    final class FleetStore: Sendable {
        let store: PinStore
        let fetcher: CountingFetcher
        let evaluator: PinningEvaluator
        let decisions = Locked<[(started: Date, allowed: Bool)]>([])

        init(store: PinStore, fetcher: CountingFetcher, trustRoots: TrustRoots) {
            self.store = store
            self.fetcher = fetcher
            self.evaluator = PinningEvaluator(store: store, trustRoots: trustRoots)
        }

        /// One request: a real handshake with the partner where `port` says it is now, then the
        /// pin decision on what it presented (updating first on a refusal, within the budget).
        func request(port: Int) async {
            let started = Date()
            let results = await TLSPartnerProber(resolver: LoopbackResolver(port)).probe(ProbeTarget(host: RotationLoopEndToEndTests.host, port: port, trustRoots: .system))
            guard let chain = results.first?.observation?.presentedChain else { return }
            let decision = await evaluator.evaluate(host: RotationLoopEndToEndTests.host, presentedChain: chain)
            decisions.withLock { $0.append((started, decision.isAllowed)) }
        }

        func allowed(since date: Date) -> Bool {
            decisions.withLock { $0.contains { $0.started >= date && $0.allowed } }
        }
    }

    /// Polls `condition` every quarter second until it holds; false when `minutes` pass first
    /// (a limit only a broken loop reaches, never the measure of a test).
    static func eventually(minutes: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let limit = Date().addingTimeInterval(minutes * 60)
        while Date() < limit {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(250))
        }
        return try await condition()
    }

    /// What a run saw.
    struct Observed {
        var firstListPublished: Bool
        var everyStoreAllowedTheFirstLeaf: Bool
        var everyStoreAllowedTheNewLeaf: Bool
        var storesThatSentAReport: Int
        var reportsReceived: Int64
        /// How each vantage point's state says the new pin was decided.
        var newPinSources: [String]
        var notModifiedAnswers: Int
        /// Distinct lists the vantage points wrote, and the list server served.
        var listsWritten: Int
        var listsServed: Int
        var impostorInAList: Bool
    }

    /// The fleet before and after the swap; vantage point 0 reaches the impostor when `intercepted`
    /// (and its own file trusts and allows the impostor's CA, so its own rules would publish it).
    static func run(intercepted: Bool) async throws -> Observed {
        let pki = try TestPKI(hosts: [host])
        let next = try pki.issueLeaf(for: [host])
        return try await PublisherEndToEndTests.withServers([pki.leaf, next, pki.impostor]) { servers in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-rotation-loop-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let keys = try (0..<3).map { _ in try P256PrivateKey() }
            let publicKeys = try keys.map { try $0.publicKey.x963Representation.base64EncodedString() }
            let allowsImpostor: [String: Any] = ["anchors": "both-roots.pem", "allowedCAs": ["intermediate.pem", "both-roots.pem"]]
            // probeInterval, K and T at their defaults (10m, 3, 20m): only agreement publishes within the test.
            let fixtures = try (0..<3).map { index in
                try EndToEndFixture(pki: pki, ports: [servers[intercepted && index == 0 ? 2 : 0].port], signingKey: keys[index],
                                    directory: folder.appendingPathComponent("vantage\(index)"), probeInterval: 600,
                                    settings: ["threshold": 2, "minimumSpan": "20m",
                                               "otherPublisherKeys": publicKeys.enumerated().filter { $0.offset != index }.map(\.element),
                                               "vantagePoint": ["name": "vantage\(index)", "proposalsFolder": folder.appendingPathComponent("shared").path]],
                                    partner: intercepted && index == 0 ? allowsImpostor : [:])
            }
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("shared"), withIntermediateDirectories: true)
            let publisherMetrics = TestMetrics()
            // The system clock: nothing here is moved by hand.
            let publishers = try fixtures.map { fixture in
                try Publisher(file: try PublicationFile(contentsOf: fixture.file("publication.json")),
                              prober: TLSPartnerProber(resolver: fixture.resolver), metricsFactory: publisherMetrics)
            }
            var endpoints: [PublisherReportEndpoint] = []
            for publisher in publishers {
                endpoints.append(try await PublisherReportEndpoint.start(host: "127.0.0.1", port: 0, publisher: publisher, logger: Logger(label: "test")))
            }
            let running = publishers.map { publisher in Task { try await publisher.run() } }

            // Every list any vantage point writes, and every one the list server serves.
            let written = Locked<[Data]>([])
            let served = Locked<[Data]>([])
            func noteWritten() {
                for fixture in fixtures {
                    guard let body = try? Data(contentsOf: fixture.listURL) else { continue }
                    written.withLock { if !$0.contains(body) { $0.append(body) } }
                }
            }
            let tracker = RepresentationTracker()
            let listFile = fixtures[1].listURL
            let listServer = try await ListServer.start(port: 0) { request in
                guard let body = FileManager.default.contents(atPath: listFile.path) else { return ListServerResponse(status: 404) }
                served.withLock { if !$0.contains(body) { $0.append(body) } }
                return ListResponders.staticList(body, tracker: tracker)(request)
            }
            let firstList = try await eventually(minutes: 5) {
                noteWritten()
                return (try? Data(contentsOf: listFile)).map { (try? ListReadBack.parse($0))?.entries.contains { $0.entry.fingerprint == pki.leaf.certificate.fingerprint } ?? false } ?? false
            }

            let storeMetrics = TestMetrics()
            let fleet = try (0..<Self.stores).map { index in
                let fetcher = CountingFetcher()
                var configuration = PinStore.Configuration(serviceURL: listServer.baseURL.appendingPathComponent("list.json"), publicKey: publicKeys[0],
                                                           identifier: "store-\(index)", storageDirectory: folder.appendingPathComponent("store-\(index)"),
                                                           requireListSignature: true)
                configuration.additionalPublicKeys = Array(publicKeys.dropFirst())
                configuration.signatureThreshold = 2
                configuration.reportURI = URL(string: "http://127.0.0.1:\(endpoints[index % 3].port)/pin-reports")
                let store = try PinStore(configuration: configuration, fetcher: fetcher, clock: SystemClock(), metricsFactory: storeMetrics,
                                         jitter: { Double.random(in: 0...1) })
                return FleetStore(store: store, fetcher: fetcher, trustRoots: pki.trustRoots)
            }
            let serving = Locked(servers[0].port)
            var storeTasks: [Task<Void, any Error>] = []
            var requestTasks: [Task<Void, Never>] = []
            var ready = false, allowed = false
            if firstList {
                storeTasks = fleet.map { member in Task { try await member.store.run() } }
                requestTasks = fleet.map { member in
                    Task {
                        while !Task.isCancelled {
                            await member.request(port: serving.withLock { $0 })
                            try? await Task.sleep(for: .seconds(1))
                        }
                    }
                }
                ready = try await eventually(minutes: 5) { fleet.allSatisfy { $0.allowed(since: .distantPast) } }
            }
            if ready {
                // The unannounced swap: the partner presents the new leaf wherever it is reached.
                let cutover = Date()
                for (index, fixture) in fixtures.enumerated() where !(intercepted && index == 0) {
                    fixture.resolver.ports = [servers[1].port]
                }
                serving.withLock { $0 = servers[1].port }
                allowed = try await eventually(minutes: 8) {
                    noteWritten()
                    return fleet.allSatisfy { $0.allowed(since: cutover) }
                }
                // One more peer cycle (30 s) of proposals: the impostor must not reach a list later either.
                try await Task.sleep(for: .seconds(35))
                noteWritten()
            }

            requestTasks.forEach { $0.cancel() }
            for task in requestTasks { await task.value }
            // Each store's run() and request loop ran once, from before the swap to here: no restart.
            storeTasks.forEach { $0.cancel() }
            for task in storeTasks { _ = await task.result }
            // How each vantage point recorded the new pin: one that adopts a list the others
            // finished before its own plan had the pin records it as "observed".
            var sources: [String] = []
            for publisher in publishers {
                sources += await publisher.state.publishedPins.filter { $0.value == next.certificate.fingerprintBase64 }.map(\.source)
            }
            running.forEach { $0.cancel() }
            for task in running { _ = await task.result }
            for endpoint in endpoints { try await endpoint.shutdown() }
            try await listServer.shutdown()

            let sent = (0..<Self.stores).filter {
                storeMetrics.counterTotal(label: "pinstore_reports_total", dimensions: [("store", "store-\($0)"), ("result", "sent")]) > 0
            }.count
            return Observed(firstListPublished: firstList, everyStoreAllowedTheFirstLeaf: ready, everyStoreAllowedTheNewLeaf: allowed, storesThatSentAReport: sent,
                            // Probing now, or (inside the 30 s after a probe) when that gap ends.
                            reportsReceived: ["probing", "rateLimited"].map {
                                publisherMetrics.counterTotal(label: "pinstore_publisher_reports_total", dimensions: [("outcome", $0)])
                            }.reduce(0, +),
                            newPinSources: sources,
                            notModifiedAnswers: fleet.map { $0.fetcher.statuses.withLock { $0.filter { $0 == 304 }.count } }.reduce(0, +),
                            listsWritten: written.withLock { $0.count }, listsServed: served.withLock { $0.count },
                            impostorInAList: Self.pins(written.withLock { $0 } + served.withLock { $0 }, pki.impostor))
        }
    }

    static func pins(_ lists: [Data], _ identity: TestIdentity) -> Bool {
        lists.contains { list in
            (try? ListReadBack.parse(list))?.entries.contains { $0.entry.fingerprint == identity.certificate.fingerprint } ?? false
        }
    }

    @Test func anUnannouncedSwapReachesEveryRunningStoreThroughReportsAgreementAndConditionalDownloads() async throws {
        let observed = try await Self.run(intercepted: false)
        try #require(observed.firstListPublished && observed.everyStoreAllowedTheFirstLeaf, "no first list, or a store never allowed it")
        #expect(observed.everyStoreAllowedTheNewLeaf, "a store still refused the new leaf")
        #expect(observed.storesThatSentAReport > 0, "no store sent a pin-failure report")
        #expect(observed.reportsReceived > 0, "no report reached a vantage point")
        #expect(observed.newPinSources.contains("agreement"), "the new pin was published by \(observed.newPinSources)")
        #expect(observed.notModifiedAnswers > 0, "no conditional request was answered 304")
    }

    @Test func anInterceptedVantagePointNeverGetsTheImpostorIntoAListWhileTheFleetFollowsTheSwap() async throws {
        let observed = try await Self.run(intercepted: true)
        try #require(observed.firstListPublished && observed.everyStoreAllowedTheFirstLeaf, "no first list, or a store never allowed it")
        #expect(observed.everyStoreAllowedTheNewLeaf, "a store still refused the new leaf")
        #expect(observed.newPinSources.contains("agreement"), "the new pin was published by \(observed.newPinSources)")
        #expect(observed.listsWritten > 0 && observed.listsServed > 0)
        #expect(!observed.impostorInAList, "a list pinned the impostor")
    }
}
