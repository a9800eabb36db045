#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreSigning
import PinStoreDevServer
import PinStoreNIO
import PinStoreTestSupport
import ServiceLifecycle
import Testing

/// Certificate rotation drills, as a partner runs them against a server process that is never
/// restarted and never calls `update()` after start-up. Real TLS servers on 127.0.0.1 present
/// `localhost.pem` (the current certificate) and `attacker.pem` (the "next" one: another leaf
/// for localhost under the same test CA); the dev list server serves a signed list the test
/// changes mid-drill. Each drill runs through the pinned URLSession and the NIO verifier.
@Suite struct RotationDrillTests {
    enum Adapter: String, CaseIterable, Sendable { case urlSession, nioVerifier }

    /// The partner's two servers and the team's list server.
    struct Drill {
        let current: TestServer
        let next: TestServer
        let lists: ListServer
        let published: Locked<Data>
        let directory: URL

        static func start(pinning certificates: [String]) async throws -> Drill {
            let published = Locked(try Self.list(certificates))
            let lists = try await ListServer.start { _ in
                ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: published.withLock { $0 })
            }
            return Drill(current: try await TestServer.tls(chain: ["pki/localhost-chain.pem"], key: "pki/localhost.key.pem"),
                         next: try await TestServer.tls(chain: ["pki/attacker-chain.pem"], key: "pki/attacker.key.pem"),
                         lists: lists, published: published,
                         directory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-drill-\(UUID().uuidString)"))
        }

        /// A list signed with the fixture key pinning each of `certificates` for localhost.
        static func list(_ certificates: [String]) throws -> Data {
            let key = try P256PrivateKey(pem: TestResources.fixtureText("keys/list-signing.key.pem"))
            let entries = try certificates.map { name in
                FingerprintEntry(name: "localhost", fingerprint: try TestResources.certificate("pki/\(name).pem").fingerprint, expires: 4_102_444_799)
            }
            return try FingerprintListSigner(privateKey: key).staticList(entries)
        }

        func publish(_ certificates: [String]) throws {
            let body = try Self.list(certificates)
            published.withLock { $0 = body }
        }

        /// The drill's store. With `clock`, the store reads the time there (no jitter): a clock
        /// nobody moves keeps the refusal-triggered downloads' spacing from ever passing, so a
        /// count of downloads means the same however long the requests take.
        func store(periodicUpdateInterval: TimeInterval = 7 * 86_400, clock: (any PinStoreClock)? = nil) throws -> PinStore {
            let configuration = PinStore.Configuration(
                serviceURL: lists.baseURL.appendingPathComponent("list.json"),
                publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64").trimmingCharacters(in: .whitespacesAndNewlines),
                periodicUpdateInterval: periodicUpdateInterval,
                storageDirectory: directory,
                requestTimeout: 120)  // a hang guard: the list server is on loopback
            guard let clock else { return try PinStore(configuration: configuration) }
            return try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
        }

        func stop() async {
            await current.shutdown()
            await next.shutdown()
            try? await lists.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// One GET of /hello through `adapter`; whether it got the page.
    static func get(_ adapter: Adapter, port: Int, store: PinStore, updateOnMismatch: Bool = true) async throws -> Bool {
        switch adapter {
        case .urlSession:
            let base = URLSessionConfiguration.ephemeral
            // A hang guard, not a speed check: a handshake plus a list update on a machine busy
            // with builds and a CPU hog.
            base.timeoutIntervalForRequest = 300
            let session = URLSession(configuration: .pinned(by: store, trustRoots: try Pins.anchors,
                                                            updateOnMismatch: updateOnMismatch, basedOn: base))
            do {
                let (data, _) = try await session.data(from: URL(string: "https://localhost:\(port)/hello")!)
                return String(decoding: data, as: UTF8.self) == "hello over a pinned connection"
            } catch let error as URLError where error.code == .serverCertificateUntrusted {
                return false
            }
        case .nioVerifier:
            let verifier = PinningTLSVerifier(store: store, trustRoots: try Pins.anchors, updateOnMismatch: updateOnMismatch)
            let outcome = try await RawNIOClient.get("/hello", port: port, verifier: verifier)
            switch outcome.result {
            case .success(let response): return response.body == "hello over a pinned connection"
            case .failure:
                #expect(outcome.decision?.isAllowed == false, "a failed request must be a pinning refusal here")
                return false
            }
        }
    }

    @Test(.timeLimit(.minutes(10)), arguments: Adapter.allCases)
    func announcedRotationIsAcceptedOnTheFirstRequestWithoutAnUpdateCall(_ adapter: Adapter) async throws {
        let drill = try await Drill.start(pinning: ["localhost"])
        defer { Task { await drill.stop() } }
        let store = try drill.store(periodicUpdateInterval: 2)
        #expect(await store.update() == .ok)                 // start-up, as README says
        try drill.publish(["localhost", "attacker"])        // the partner announces its next certificate
        let next = try TestResources.certificate("pki/attacker.pem").fingerprint
        // Traffic to the current server only, until the schedule has brought the new list in
        // (the event itself; the time limit is the hang guard).
        while !store.storedEntries.contains(where: { $0.fingerprint == next }) {
            #expect(try await Self.get(adapter, port: drill.current.port, store: store))
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(drill.lists.requestCount >= 2)
        // The rotated server is accepted on its first request, and not thanks to an update
        // after a refusal: those are off for this request (a scheduled download may still
        // come, every 2 seconds).
        #expect(try await Self.get(adapter, port: drill.next.port, store: store, updateOnMismatch: false))
    }

    @Test(.timeLimit(.minutes(10)), arguments: Adapter.allCases)
    func idleProcessPicksUpTheNewPinOnScheduleAndStopsOnGracefulShutdown(_ adapter: Adapter) async throws {
        let drill = try await Drill.start(pinning: ["localhost"])
        defer { Task { await drill.stop() } }
        let store = try drill.store(periodicUpdateInterval: 2)
        let group = ServiceGroup(configuration: .init(services: [.init(service: store)], logger: .init(label: "drill")))
        let running = Task { try await group.run() }
        // No traffic at all: run() alone downloads at start and on schedule (waits on those
        // events; the time limit is the hang guard).
        while store.storedEntries.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        try drill.publish(["localhost", "attacker"])
        let next = try TestResources.certificate("pki/attacker.pem").fingerprint
        while !store.storedEntries.contains(where: { $0.fingerprint == next }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.get(adapter, port: drill.next.port, store: store, updateOnMismatch: false))
        // Shutdown ends run() at once (milliseconds on an idle machine; PinStoreRunTests proves
        // with a clock nobody advances that it interrupts the sleep).
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test(arguments: Adapter.allCases)
    func emergencyRotationIsAcceptedAtOnceAndTheOldCertificateIsRefused(_ adapter: Adapter) async throws {
        let drill = try await Drill.start(pinning: ["localhost"])
        defer { Task { await drill.stop() } }
        // The refusal-triggered downloads' spacing (a minute) must not pass during the 20
        // refused requests, however long a loaded machine takes over them.
        let store = try drill.store(clock: SettableClock())
        #expect(await store.update() == .ok)
        #expect(try await Self.get(adapter, port: drill.current.port, store: store))
        try drill.publish(["attacker"])                     // the old key is compromised: only the new one
        #expect(try await Self.get(adapter, port: drill.next.port, store: store))
        let downloads = drill.lists.requestCount
        #expect(downloads == 2)
        for _ in 0..<20 {
            #expect(try await !Self.get(adapter, port: drill.current.port, store: store))
        }
        #expect(drill.lists.requestCount <= downloads + 1)
        #expect(drill.current.receivedBytes.withLock { $0 } > 0)  // only from the one allowed request
    }

    @Test(arguments: Adapter.allCases)
    func aBurstOfAHundredImpostorsCausesAtMostOneDownload(_ adapter: Adapter) async throws {
        let drill = try await Drill.start(pinning: ["localhost"])
        defer { Task { await drill.stop() } }
        // A refusal's download that brings nothing new allows another after 10 to 30 s: a
        // burst that took longer than that on a loaded machine saw 3 downloads. With a clock
        // nobody moves, the burst is one instant, as the rule means it.
        let store = try drill.store(clock: SettableClock())
        #expect(await store.update() == .ok)
        // attacker.pem chains to the trusted CA but is not pinned: an impostor.
        let port = drill.next.port
        let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 { group.addTask { try await Self.get(adapter, port: port, store: store) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(accepted == 0)
        #expect(drill.lists.requestCount <= 2)
        #expect(drill.next.receivedBytes.withLock { $0 } == 0)
    }

    @Test func cachedVerificationsDoNotOutliveThePinThatAdmittedThem() async throws {
        let drill = try await Drill.start(pinning: ["attacker"])
        defer { Task { await drill.stop() } }
        let store = try drill.store()
        #expect(await store.update() == .ok)
        // The chain verification of this server is cached by the first connection...
        #expect(try await Self.get(.nioVerifier, port: drill.next.port, store: store, updateOnMismatch: false))
        #expect(try await Self.get(.nioVerifier, port: drill.next.port, store: store, updateOnMismatch: false))
        // ...and the list that pinned it is replaced: the next connection is refused.
        try drill.publish(["localhost"])
        #expect(await store.update(mode: .forced) == .ok)
        #expect(try await !Self.get(.nioVerifier, port: drill.next.port, store: store, updateOnMismatch: false))
        #expect(try await !Self.get(.urlSession, port: drill.next.port, store: store, updateOnMismatch: false))
    }
}
#endif
