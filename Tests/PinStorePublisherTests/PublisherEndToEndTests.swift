import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// The issue's end-to-end behaviours: the real prober against TLS servers on 127.0.0.1, real
/// publication, state and list files, and a pinned client that downloads what the publisher
/// published and checks what the servers present. The clock is moved by hand (K sightings over T
/// and a grace period of a day take no real time); every wait is a round the test runs itself.
@Suite(.timeLimit(.minutes(15))) struct PublisherEndToEndTests {
    static let host = EndToEndFixture.host
    /// The fixture's K (minimumSightings).
    static let sightings = 3

    /// Runs `body` with servers presenting `identities` (one port each), shut down afterwards.
    static func withServers<R>(_ identities: [TestIdentity], _ body: ([TestHTTPSServer]) async throws -> R) async throws -> R {
        var servers: [TestHTTPSServer] = []
        do {
            for identity in identities { servers.append(try await TestHTTPSServer.start(presenting: identity)) }
            let result = try await body(servers)
            for server in servers { try await server.shutdown() }
            return result
        } catch {
            for server in servers { try? await server.shutdown() }
            throw error
        }
    }

    /// A publisher that has published `servers[0]`'s leaf, and a client that downloaded it.
    static func published(_ pki: TestPKI, serving port: Int, settings: [String: Any] = [:], partner: [String: Any] = [:]) async throws
        -> (EndToEndFixture, Publisher, PinnedClient) {
        let fixture = try EndToEndFixture(pki: pki, ports: [port], settings: settings, partner: partner)
        let publisher = try fixture.publisher()
        for _ in 0...sightings { await fixture.round(publisher) }
        let client = try await PinnedClient(listFile: fixture.listURL, publicKeys: [try fixture.publicKeyBase64],
                                            trustRoots: pki.trustRoots, clock: fixture.clock)
        let first = await client.update()
        try #require(first == .ok, "the first list was not accepted: \(first)")
        return (fixture, publisher, client)
    }

    /// Whether the list the client holds carries `identity`'s leaf (a pin check alone, without
    /// the trust evaluation that would refuse an impostor anyway).
    static func listPins(_ client: PinnedClient, _ identity: TestIdentity) -> Bool {
        client.store.matchPins(commonName: host, certificateData: identity.certificate.derRepresentation) == .trusted
    }

    @Test func anAnnouncedRotationRefusesNoRequestAndWithdrawsTheOldPinAfterGrace() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, next]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port)
            #expect(try await client.request(port: servers[0].port))

            // The next key is announced before it is deployed; clients pick the list up on an update.
            try await publisher.announce(partnerID: EndToEndFixture.partnerID, spkiSHA256: next.certificate.spkiSHA256Base64)
            await fixture.round(publisher)
            #expect(await client.update() == .ok)
            #expect(client.pins(next.chainDER))

            // Cutover: the name now leads to the new certificate; requests go on through it.
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(Self.sightings + 2) {
                #expect(try await client.request(port: servers[1].port))
                await fixture.round(publisher)
                _ = await client.update()
            }
            #expect(client.refusals == 0)
            // Within the grace period the old pin stays (a client still connected to an old
            // address is not cut off)...
            #expect(client.pins(pki.leaf.chainDER))
            // ...and once a grace period has passed without the old certificate, it is withdrawn
            // (the old address is remembered with what it presented last until it has been gone
            // for a grace period too, so this may take a second one).
            var withdrawn = false
            for _ in 0..<3 where !withdrawn {
                fixture.clock.advance(86_400)
                await fixture.round(publisher)
                #expect(await client.update() == .ok)
                withdrawn = !Self.listPins(client, pki.leaf)
            }
            #expect(withdrawn)
            #expect(client.pins(next.chainDER))
            #expect(try await client.request(port: servers[1].port))
            #expect(client.refusals == 0)
            try await client.shutdown()
        }
    }

    @Test func anUnannouncedLeafRotationIsRefusedOnlyUntilItsPublication() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, next]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port)
            fixture.resolver.ports = [servers[1].port]
            var rounds = 0
            while !Self.listPins(client, next), rounds < 3 * Self.sightings {
                await fixture.round(publisher)
                rounds += 1
                // The app's traffic: a refusal makes the client download the list again.
                _ = try await client.request(port: servers[1].port)
            }
            #expect(Self.listPins(client, next), "the new certificate was never published")
            let inWindow = client.refusals
            // Refused while K sightings accumulate, and at most that long.
            #expect(inWindow >= 1)
            #expect(inWindow < Self.sightings)
            for _ in 0..<3 {
                await fixture.round(publisher)
                #expect(try await client.request(port: servers[1].port))
            }
            #expect(client.refusals == inWindow)
            try await client.shutdown()
        }
    }

    @Test func anImpostorFromAnUntrustedCAIsStagedNotPublished() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await Self.withServers([pki.leaf, pki.impostor]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port)
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(2 * Self.sightings) { await fixture.round(publisher) }
            _ = await client.update()
            #expect(!Self.listPins(client, pki.impostor))
            #expect(Self.listPins(client, pki.leaf))
            let staged = await publisher.pending().filter { $0.leafSHA256 == pki.impostor.certificate.fingerprintBase64 }
            #expect(staged.count == 1)
            #expect(staged.first?.needsPerson == true)
            try await client.shutdown()
        }
    }

    @Test func aValidLeafFromACANotAllowedForThePartnerIsStagedNotPublished() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await Self.withServers([pki.leaf, pki.impostor]) { servers in
            // The partner's anchors trust both roots, so the impostor's chain validates; only the
            // partner's allowed CAs tell it apart.
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port, partner: ["anchors": "both-roots.pem"])
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(2 * Self.sightings) { await fixture.round(publisher) }
            _ = await client.update()
            #expect(!Self.listPins(client, pki.impostor))
            let staged = await publisher.pending().filter { $0.leafSHA256 == pki.impostor.certificate.fingerprintBase64 }
            #expect(staged.first.map { if case .caNotAllowed = $0.outcome { true } else { false } } == true)
            try await client.shutdown()
        }
    }

    @Test func aCertificateSeenOnceIsNotPublished() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let transient = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, transient]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port)
            fixture.resolver.ports = [servers[1].port]
            await fixture.round(publisher)
            fixture.resolver.ports = [servers[0].port]
            for _ in 0..<(2 * Self.sightings) { await fixture.round(publisher) }
            _ = await client.update()
            #expect(!Self.listPins(client, transient))
            #expect(Self.listPins(client, pki.leaf))
            try await client.shutdown()
        }
    }

    @Test func twoAddressesServingTwoCertificatesAreBothPinned() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let other = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, other]) { servers in
            let fixture = try EndToEndFixture(pki: pki, ports: servers.map(\.port))
            let publisher = try fixture.publisher()
            for _ in 0...Self.sightings { await fixture.round(publisher) }
            let client = try await PinnedClient(listFile: fixture.listURL, publicKeys: [try fixture.publicKeyBase64],
                                                trustRoots: pki.trustRoots, clock: fixture.clock)
            #expect(await client.update() == .ok)
            #expect(try await client.request(port: servers[0].port))
            #expect(try await client.request(port: servers[1].port))
            #expect(client.refusals == 0)
            // Both stay pinned past the grace period while both are served.
            fixture.clock.advance(2 * 86_400)
            await fixture.round(publisher)
            #expect(await client.update() == .ok)
            #expect(Self.listPins(client, pki.leaf) && Self.listPins(client, other))
            try await client.shutdown()
        }
    }

    @Test func aPartnerPinnedByItsCAKeyRotatesWithinItsCAWithNoListChangeAndNoRefusal() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, next]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port, partner: ["pin": "issuerKey"])
            let before = try Data(contentsOf: fixture.listURL)
            let beforeEntries = try Self.entries(before)
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(Self.sightings + 1) {
                #expect(try await client.request(port: servers[1].port))
                await fixture.round(publisher)
            }
            #expect(client.refusals == 0)
            #expect(try Self.entries(Data(contentsOf: fixture.listURL)) == beforeEntries)
            try await client.shutdown()
        }
    }

    @Test func aPartnerPinnedByItsCAKeyHasALeafFromAnotherCAStaged() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await Self.withServers([pki.leaf, pki.impostor]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port,
                                                                         partner: ["pin": "issuerKey", "anchors": "both-roots.pem"])
            let before = try Self.entries(Data(contentsOf: fixture.listURL))
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<(2 * Self.sightings) { await fixture.round(publisher) }
            #expect(try Self.entries(Data(contentsOf: fixture.listURL)) == before)
            #expect(await publisher.pending().contains { $0.leafSHA256 == pki.impostor.certificate.fingerprintBase64 && $0.needsPerson })
            #expect(!(try await client.request(port: servers[1].port)))
            try await client.shutdown()
        }
    }

    @Test func approvingAStagedChangeWithAListKeyPublishesIt() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await Self.withServers([pki.leaf, pki.impostor]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port, partner: ["anchors": "both-roots.pem"])
            fixture.resolver.ports = [servers[1].port]
            for _ in 0..<Self.sightings { await fixture.round(publisher) }
            let change = try #require(await publisher.pending().first { $0.leafSHA256 == pki.impostor.certificate.fingerprintBase64 })
            try await publisher.approve(changeID: change.id, signer: try KeyFileSigner(privateKey: fixture.signingKey))
            #expect(await client.update() == .ok)
            #expect(Self.listPins(client, pki.impostor))
            try await client.shutdown()
        }
    }

    @Test func threePublishersWithThresholdTwoPublishOnlyWhatTwoVantagePointsSee() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let seenByOne = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, seenByOne]) { servers in
            let keys = try (0..<3).map { _ in try P256PrivateKey() }
            let publicKeys = try keys.map { try $0.publicKey.x963Representation.base64EncodedString() }
            let proposals = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-proposals-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: proposals, withIntermediateDirectories: true)
            let clock = SteppedClock()
            let fixtures = try (0..<3).map { index in
                try EndToEndFixture(pki: pki, ports: index == 0 ? servers.map(\.port) : [servers[0].port], clock: clock, signingKey: keys[index],
                                     settings: ["threshold": 2, "otherPublisherKeys": publicKeys.enumerated().filter { $0.offset != index }.map(\.element),
                                                "vantagePoint": ["name": "vantage\(index)", "proposalsFolder": proposals.path, "proposalTimeout": "2m"]])
            }
            let publishers = try fixtures.map { try $0.publisher() }
            func round() async {
                clock.advance(60)
                for publisher in publishers { await publisher.probe() }
                // Propose, co-sign, finish and adopt may take a cycle each. The lone vantage point
                // cycles first, so its proposal (with the extra certificate) is the one the others
                // refuse; once it times out, the lone one leaves the next version to the others.
                for _ in 0..<3 { for publisher in publishers { await publisher.cycle() } }
            }
            let client = try await PinnedClient(listFile: fixtures[0].listURL, publicKeys: publicKeys, threshold: 2,
                                                trustRoots: pki.trustRoots, clock: clock)
            var first = PinStore.UpdateResult.networkError
            for _ in 0..<20 where first != .ok {
                await round()
                first = await client.update()
            }
            let shared = (try? FileManager.default.contentsOfDirectory(atPath: proposals.path)) ?? []
            #expect(first == .ok, "\(first); proposals folder: \(shared.sorted())")
            #expect(Self.listPins(client, pki.leaf))
            #expect(!Self.listPins(client, seenByOne))

            // A second vantage point sees it too: now it is published.
            fixtures[1].resolver.ports = servers.map(\.port)
            for _ in 0..<20 where !Self.listPins(client, seenByOne) {
                await round()
                _ = await client.update()
            }
            #expect(Self.listPins(client, seenByOne))
            // One version, one list: every vantage point serves the same bytes.
            let lists = try fixtures.map { try Data(contentsOf: $0.listURL) }
            #expect(Set(lists).count == 1)
            try await client.shutdown()
        }
    }

    /// Issue 45, item 3, through the real prober: every round a second partner presents new
    /// certificates with 12 KB subjects at seven addresses (kept within the bounds) and one of
    /// about 60 KB (refused by the probe, never kept). The state file stays under the bound and
    /// the first partner's renewal is published and accepted by a client.
    @Test func aPartnerRotatingBigCertificatesAtEveryRoundNeitherFillsTheStateNorStopsTheOthers() async throws {
        let hostile = "hostile.pinstore.test"
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, next]) { servers in
            let fixture = try EndToEndFixture(pki: pki, ports: [servers[0].port], morePartners: [
                ["id": "hostile", "host": hostile, "port": 443, "anchors": "anchors.pem", "allowedCAs": ["intermediate.pem"]],
            ])
            let publisher = try fixture.publisher()
            let bound = 2 * PublisherState.Bounds.bytesPerPartner
            var oversized: [String] = []
            for round in 0..<6 {
                var identities = try (0..<7).map { _ in try pki.issueLeaf(for: [hostile], subjectPadding: 12_000) }
                identities.append(try pki.issueLeaf(for: [hostile], subjectPadding: 51_000))   // about 60 KB of DER
                oversized.append(identities[7].certificate.fingerprintBase64)
                // The first partner renews once its first certificate is published.
                if round == 3 { fixture.resolver.ports = [servers[1].port] }
                try await Self.withServers(identities) { hostileServers in
                    fixture.resolver.setPorts(hostileServers.map(\.port), forHost: hostile)
                    #expect(await fixture.round(publisher), "round \(round)")
                }
                let size = try #require(try FileManager.default.attributesOfItem(atPath: fixture.file("state/state.json").path)[.size] as? Int)
                #expect(size <= bound, "round \(round): the state file takes \(size) bytes")
            }
            let record = try #require(await publisher.state.partners["hostile"])
            #expect(record.certificates.count == PublisherState.Bounds.certificates)   // 42 validated leaves seen
            #expect(record.forgottenLeaves > 0)
            #expect(record.certificates.values.allSatisfy { $0.subject.utf8.count <= PublisherState.Bounds.textBytes })
            #expect(oversized.allSatisfy { record.certificates[$0] == nil && !record.refusedLeaves.map(\.leafSHA256).contains($0) })

            let client = try await PinnedClient(listFile: fixture.listURL, publicKeys: [try fixture.publicKeyBase64],
                                                trustRoots: pki.trustRoots, clock: fixture.clock)
            #expect(await client.update() == .ok)
            #expect(try await client.request(port: servers[1].port))
            try await client.shutdown()
        }
    }

    /// Issue 45, item 4: an announced key that was deployed, seen and then retired is withdrawn
    /// like any other pin (a grace period after it was last presented; the retired address is
    /// remembered for one more), not kept for the 90 days of its announcement.
    @Test func aDeployedAnnouncedKeyIsWithdrawnAGracePeriodAfterItIsRetired() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let next = try pki.issueLeaf(for: [Self.host])
        let third = try pki.issueLeaf(for: [Self.host])
        try await Self.withServers([pki.leaf, next, third]) { servers in
            let (fixture, publisher, client) = try await Self.published(pki, serving: servers[0].port)
            try await publisher.announce(partnerID: EndToEndFixture.partnerID, spkiSHA256: next.certificate.spkiSHA256Base64)
            await fixture.round(publisher)
            #expect(await client.update() == .ok)
            // Deployed for one round (too short for its certificate to be published by itself:
            // only the announced key pins it), then retired by the next rotation.
            fixture.resolver.ports = [servers[1].port]
            await fixture.round(publisher)
            #expect(try await client.request(port: servers[1].port))
            #expect(await publisher.state.announcements.first?.firstPresented != nil)
            fixture.resolver.ports = [servers[2].port]
            for _ in 0...Self.sightings { await fixture.round(publisher) }
            _ = await client.update()
            #expect(client.pins(next.chainDER))   // within the grace period
            var withdrawn = false
            var graces = 0
            while !withdrawn, graces < 3 {
                fixture.clock.advance(86_400)
                graces += 1
                await fixture.round(publisher)
                #expect(await client.update() == .ok)
                withdrawn = !client.pins(next.chainDER)
            }
            #expect(withdrawn, "the retired announced key was still pinned \(graces) grace periods later")
            #expect(await publisher.state.announcements.first?.ended != nil)
            #expect(try await client.request(port: servers[2].port))
            try await client.shutdown()
        }
    }

    /// The entries of a published list, signatures aside (a re-signed list with the same pins
    /// has the same entries).
    static func entries(_ list: Data) throws -> [String] {
        let object = try #require(try JSONSerialization.jsonObject(with: list) as? [String: Any])
        let fingerprints = try #require(object["fingerprints"] as? [[String: Any]])
        return fingerprints.map { "\($0["name"] ?? "") \($0["fingerprint"] ?? "") \($0["kind"] ?? "")" }.sorted()
    }
}
