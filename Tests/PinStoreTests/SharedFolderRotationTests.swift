import Foundation
import PinStoreDevServer
import Testing
@testable import PinStore

/// Two workers of one server share one storage folder when the list-signing key leaks. Real
/// stores, real files, and the team's list server on 127.0.0.1 serving the list and
/// `/keys.json` to both workers' real fetchers; no restart anywhere.
@Suite struct SharedFolderRotationTests {
    /// What the list server serves; the test changes it (as the attacker, then as the team).
    final class Served: Sendable {
        let list = Locked(Data())
        let keys = Locked(Data("{\"keyDocuments\": []}".utf8))
    }

    /// Key 0 is key set 1 (the configuration) and leaks; key set 2 is key 1 alone.
    static func configuration(_ ring: KeyRing, server: ListServer, directory: URL) throws -> PinStore.Configuration {
        var configuration = PinStore.Configuration(serviceURL: server.baseURL.appendingPathComponent("list.json"),
                                                   publicKey: try ring.publicKey(0), identifier: "worker",
                                                   storageDirectory: directory, requestTimeout: 60)
        configuration.keyDocumentURL = server.baseURL.appendingPathComponent("keys.json")
        return configuration
    }

    /// The team's server: the list and `/keys.json` as `served` holds them now.
    static func server(_ served: Served) async throws -> ListServer {
        try await ListServer.start(responder: ListResponders.withKeyDocuments({ served.keys.withLock { $0 } }) { _ in
            ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: served.list.withLock { $0 })
        })
    }

    @Test(.timeLimit(.minutes(10)))
    func aWorkerAdoptingTheRotationFromTheFolderDropsTheLeakedListAndBothTakeTheTeamsNextLists() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        let served = Served()
        let server = try await Self.server(served)
        do {
            let clock = ManualClock.inValidPeriod()
            let configuration = try Self.configuration(ring, server: server, directory: directory.url)
            let a = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
            let b = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)

            // Key 0 leaks; whoever holds it answers the list request with its own pins, at a
            // version and timestamp near the maximum. Both workers take it.
            let leaked = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: Int64.max - 1, timestamp: Int64.max - 1)
            served.list.withLock { $0 = leaked }
            try #require(await a.update(mode: .forced) == .ok)
            try #require(await b.update(mode: .forced) == .ok)
            try #require(b.storedEntries == [Rotation.other])
            clock.advance(configuration.periodicUpdateInterval + 1)   // both workers' scheduled updates are due

            // The team retires key 0 (key document 2: key 1 alone, signed by both) and publishes
            // its next list, signed by key 1, at a far lower version than the leaked one.
            let rotation = try Rotation.served([Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [0, 1])])
            let teams = try Rotation.list(ring, signers: [1], entries: [Rotation.pinned], version: 43)
            served.keys.withLock { $0 = rotation }
            served.list.withLock { $0 = teams }

            // Worker A follows the rotation from the server: key set 2 did not sign the leaked
            // list, so it stops counting with its version, and the team's list goes in force.
            let followed = await a.updateWithReport(mode: .forced)
            #expect(followed.result == .ok, "\(String(describing: followed.error))")
            #expect(a.keySetVersion == 2)
            #expect(a.storedEntries == [Rotation.pinned])

            // Worker B's scheduled update finds the rotation and A's list in the shared folder:
            // it adopts the keys, drops the leaked list they did not sign, and takes A's list,
            // without asking the server.
            let requests = server.requestCount
            let adopted = await b.updater.scheduledUpdate()
            #expect(adopted?.result == .ok, "\(String(describing: adopted?.error))")
            #expect(adopted?.activity == .adoptedFromStoreFile)
            #expect(b.keySetVersion == 2)
            #expect(b.storedEntries == [Rotation.pinned])
            #expect(server.requestCount == requests)

            // The team's next list (still far below the leaked version) goes in force in both.
            let next = FingerprintEntry(name: Rotation.host, fingerprint: Data(repeating: 9, count: 32), expires: 4_102_444_799)
            let teamsNext = try Rotation.list(ring, signers: [1], entries: [next], version: 44)
            served.list.withLock { $0 = teamsNext }
            for (name, worker) in [("A", a), ("B", b)] {
                let report = await worker.updateWithReport(mode: .forced)
                #expect(report.result == .ok, "\(name): \(String(describing: report.error))")
                #expect(worker.storedEntries == [next], "\(name)")
                #expect(worker.keySetVersion == 2, "\(name)")
            }
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aWorkerCutOffFromTheServerStopsCountingTheLeakedListOnceTheRotationIsInTheFolder() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let ring = try KeyRing(count: 2)
        let served = Served()
        let server = try await Self.server(served)
        do {
            let clock = ManualClock.inValidPeriod()
            let configuration = try Self.configuration(ring, server: server, directory: directory.url)
            let a = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
            // Worker B never reaches the server: all it knows comes through the shared folder.
            let cutOff = ScriptedFetcher { _ throws(PinStoreError) in throw PinStoreError(.network, "not reachable in this test") }
            let b = try PinStore(configuration: configuration, fetcher: cutOff, clock: clock)

            let leaked = try Rotation.list(ring, signers: [0], entries: [Rotation.other], version: Int64.max - 1, timestamp: Int64.max - 1)
            served.list.withLock { $0 = leaked }
            try #require(await a.update(mode: .forced) == .ok)
            _ = await b.updater.scheduledUpdate()
            try #require(b.storedEntries == [Rotation.other])
            clock.advance(configuration.periodicUpdateInterval + 1)

            // The team retires key 0 before its next list is ready: the server still serves the
            // leaked list. A follows the rotation and stops counting that list.
            let rotation = try Rotation.served([Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [0, 1])])
            served.keys.withLock { $0 = rotation }
            #expect(await a.update(mode: .forced) == .invalidSignature)
            #expect(a.storedEntries.isEmpty)

            // B's scheduled update finds key document 2 in the folder, and no newer list.
            let report = await b.updater.scheduledUpdate()
            #expect(report?.result == .networkError)
            #expect(b.keySetVersion == 2)
            #expect(b.storedEntries.isEmpty)
            #expect(cutOff.requestCount == 1)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }
}
