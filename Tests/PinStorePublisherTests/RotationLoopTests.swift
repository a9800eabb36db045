import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
import PinStoreTestSupport
import Logging
@testable import PinStorePublisher

/// The rotation loop, end to end: a partner on 127.0.0.1 swaps its leaf unannounced (a new key
/// from the same allowed CA); a store's pin-failure report reaches a publisher's report endpoint
/// over real HTTP; the vantage points probe with the real TLS prober, agree in one round, and a
/// pinned client allows the new leaf, with no clock moved by K over T.
@Suite(.timeLimit(.minutes(15))) struct RotationLoopTests {
    static let host = EndToEndFixture.host

    /// POSTs `body` to the endpoint and returns the HTTP status.
    static func post(_ body: Data, to port: Int) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/pin-reports")!)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    static func report(host: String = host, port: Int? = 443) throws -> Data {
        try PinFailureReport(dateTime: Date(), hostname: host, port: port, notedHostname: host, includeSubdomains: false, enforcePinning: true,
                             validatedCertificateChain: [], servedCertificateChain: [], knownPins: [], effectiveExpirationDate: nil,
                             reason: "pin_mismatch").jsonData()
    }

    /// A publisher whose report endpoint listens on an ephemeral port of 127.0.0.1.
    static func endpoint(for publisher: Publisher) async throws -> PublisherReportEndpoint {
        try await PublisherReportEndpoint.start(host: "127.0.0.1", port: 0, publisher: publisher, logger: Logger(label: "test"))
    }

    @Test func aReportedUnannouncedRotationIsPublishedByAgreementWithinARound() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf, next]) { servers in
            let group = try VantagePointEndToEndTests.Group(pki: pki, k: 2, ports: [[servers[0].port], [servers[0].port], [servers[0].port]])
            defer { group.cleanUp() }
            let client = try await group.client(pki: pki, k: 2, reading: 2)
            let first = try await VantagePointEndToEndTests.roundOfFirstList(group, client: client, pki: pki, rounds: 6)
            try #require(first != nil)
            #expect(try await client.request(port: servers[0].port))

            // The partner swaps its leaf unannounced; clients are refused at once.
            group.fixtures.forEach { $0.resolver.ports = [servers[1].port] }
            group.clock.advance(90)
            #expect(try await !client.request(port: servers[1].port))

            // A store reports it to vantage point 0; that makes it probe now and propose.
            let endpoint = try await Self.endpoint(for: group.publishers[0])
            #expect(try await Self.post(try Self.report(), to: endpoint.port) == 202)
            try await endpoint.shutdown()
            await group.publishers[0].runDueWork()
            // The others, at their next cycle (30 s), read the proposal as a hint, probe, agree.
            group.clock.advance(30)
            for publisher in group.publishers[1...] { await publisher.runDueWork() }
            for publisher in group.publishers { await publisher.runDueWork() }

            #expect(await client.update() == .ok)
            #expect(try await client.request(port: servers[1].port))
            // Published on one sighting per vantage point, well before K = 3 over T.
            for publisher in group.publishers {
                let seen = await publisher.state.partners[EndToEndFixture.partnerID]?.certificates[next.certificate.fingerprintBase64]
                #expect(seen?.sightings == 1)
            }
            try await client.shutdown()
        }
    }

    @Test func aSinglePublisherProbesOnAReportButStillWaitsForKOverT() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf, next]) { servers in
            let (fixture, publisher, client) = try await PublisherEndToEndTests.published(pki, serving: servers[0].port)
            fixture.resolver.ports = [servers[1].port]
            fixture.clock.advance(90)
            #expect(await publisher.receiveReport(try Self.report()) == .probing(partnerID: EndToEndFixture.partnerID))
            await publisher.runDueWork()
            let seen = await publisher.state.partners[EndToEndFixture.partnerID]?.certificates[next.certificate.fingerprintBase64]
            #expect(seen?.sightings == 1)
            #expect(await client.update() == .ok)
            #expect(!PublisherEndToEndTests.listPins(client, next))
            try await client.shutdown()
        }
    }

    @Test func aSecondReportWithinTheGapCausesNoSecondProbe() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf]) { servers in
            let fixture = try EndToEndFixture(pki: pki, ports: [servers[0].port])
            defer { try? FileManager.default.removeItem(at: fixture.directory) }
            let publisher = try fixture.publisher()
            await publisher.runDueWork()
            fixture.clock.advance(40)
            #expect(await publisher.receiveReport(try Self.report()) == .probing(partnerID: EndToEndFixture.partnerID))
            await publisher.runDueWork()
            fixture.clock.advance(5)
            #expect(await publisher.receiveReport(try Self.report()) == .rateLimited(partnerID: EndToEndFixture.partnerID))
        }
    }

    /// A clock whose sleeps are recorded and last until cancelled: what a loop sleeping until
    /// its next work asked for, with no time passing.
    final class SleepRecordingClock: PinStoreClock, @unchecked Sendable {
        private let lock = NSLock()
        private var current: Date
        private var recorded: [Date] = []
        init(_ start: Date) { current = start }
        func now() -> Date { lock.withLock { current } }
        func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
        var sleeps: [Date] { lock.withLock { recorded } }
        func sleep(until deadline: Date) async throws {
            lock.withLock { recorded.append(deadline) }
            try await Task.sleep(for: .seconds(HangGuard.seconds * 10))
        }
    }

    /// A lone publisher's loop sleeps a whole `probeInterval` between rounds. A report inside
    /// the 30 s gap after a probe defers the probe to the gap's end; the loop must wake and
    /// sleep only until then, or the swap stays unseen until the next probe interval.
    @Test func aReportInsideTheGapWakesALonePublishersLoopForTheProbeWhenTheGapEnds() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf]) { servers in
            let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let clock = SleepRecordingClock(start)
            let fixture = try EndToEndFixture(pki: pki, ports: [servers[0].port], probeInterval: 600)
            defer { try? FileManager.default.removeItem(at: fixture.directory) }
            let prober = TLSPartnerProber(configuration: .hangGuarded, resolver: fixture.resolver, now: { clock.now() })
            let publisher = try Publisher(file: try PublicationFile(contentsOf: fixture.file("publication.json")), prober: prober, clock: clock)
            let loop = Task { try await publisher.run() }
            defer { loop.cancel() }
            #expect(try await pollUntil { !clock.sleeps.isEmpty })
            #expect(clock.sleeps.first == start.addingTimeInterval(600), "\(clock.sleeps)")
            clock.advance(10)
            #expect(await publisher.receiveReport(try Self.report()) == .rateLimited(partnerID: EndToEndFixture.partnerID))
            #expect(try await pollUntil { clock.sleeps.count >= 2 }, "the loop was not woken")
            #expect(clock.sleeps.last == start.addingTimeInterval(Publisher.reportProbeGap), "\(clock.sleeps)")
            // A second report inside the gap changes nothing, so it does not wake the loop again.
            #expect(await publisher.receiveReport(try Self.report()) == .rateLimited(partnerID: EndToEndFixture.partnerID))
            #expect(clock.sleeps.count == 2)
        }
    }

    @Test func aReportForAHostOutsideThePublicationFileIsIgnored() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let fixture = try EndToEndFixture(pki: pki, ports: [])
        defer { try? FileManager.default.removeItem(at: fixture.directory) }
        let publisher = try fixture.publisher()
        #expect(await publisher.receiveReport(try Self.report(host: "elsewhere.example")) == .unknownHost("elsewhere.example"))
        #expect(await publisher.receiveReport(try Self.report(port: 8443)) == .unknownHost(Self.host))
        #expect(await publisher.receiveReport(Data("{}".utf8)) == .unreadable)
    }

    @Test func theEndpointRefusesWhatIsNotAReportAndBodiesOverItsBound() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let fixture = try EndToEndFixture(pki: pki, ports: [])
        defer { try? FileManager.default.removeItem(at: fixture.directory) }
        let endpoint = try await Self.endpoint(for: try fixture.publisher())
        #expect(try await Self.post(Data("not json".utf8), to: endpoint.port) == 400)
        #expect(try await Self.post(Data(repeating: 0x20, count: Publisher.maximumReportSize + 1), to: endpoint.port) == 413)
        #expect(try await Self.post(try Self.report(host: "elsewhere.example"), to: endpoint.port) == 202)
        try await endpoint.shutdown()
    }
}
