import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Each finding of the vantage-point issue, tried as it was described: publishers with the real
/// TLS prober against servers on 127.0.0.1, a real shared folder, real output folders, and a
/// pinned client downloading what they publish. A compromised vantage point's moves are made
/// with its real key, through the same folder.
@Suite(.timeLimit(.minutes(15))) struct VantagePointEndToEndTests {
    static let host = EndToEndFixture.host

    /// n publishers with threshold k sharing one folder; vantage point `i` reaches `ports[i]`.
    struct Group {
        let folder: URL
        let clock = SteppedClock()
        let keys: [P256PrivateKey]
        let fixtures: [EndToEndFixture]
        let publishers: [Publisher]
        var shared: SharedProposals { SharedProposals(medium: FolderMedium(url: folder)) }

        init(pki: TestPKI, k: Int, ports: [[Int]], partner: [Int: [String: Any]] = [:]) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-shared-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let keys = try ports.map { _ in try P256PrivateKey() }
            let publicKeys = try keys.map { try $0.publicKey.x963Representation.base64EncodedString() }
            let clock = self.clock
            let folder = self.folder
            fixtures = try ports.enumerated().map { index, ports in
                try EndToEndFixture(pki: pki, ports: ports, clock: clock, signingKey: keys[index],
                                    settings: ["threshold": k, "otherPublisherKeys": publicKeys.enumerated().filter { $0.offset != index }.map(\.element),
                                               "vantagePoint": ["name": "vantage\(index)", "proposalsFolder": folder.path]],
                                    partner: partner[index] ?? [:])
            }
            publishers = try fixtures.map { try $0.publisher() }
            self.keys = keys
        }

        /// One probe interval: every publisher probes, then each cycles once, in `order`.
        func round(order: [Int]? = nil) async {
            clock.advance(fixtures[0].probeInterval)
            for publisher in publishers { await publisher.probe() }
            for index in order ?? Array(publishers.indices) { await publishers[index].cycle() }
        }

        func client(pki: TestPKI, k: Int, reading index: Int) async throws -> PinnedClient {
            try await PinnedClient(listFile: fixtures[index].listURL, publicKeys: try keys.map { try $0.publicKey.x963Representation.base64EncodedString() },
                                   threshold: k, trustRoots: pki.trustRoots, clock: clock)
        }

        /// Every entry of every list any publisher serves.
        func servedFingerprints() -> Set<String> {
            Set(fixtures.compactMap { try? Data(contentsOf: $0.listURL) }.flatMap { list in
                ((try? ListReadBack.parse(list))?.entries ?? []).map { $0.entry.fingerprint.base64EncodedString() }
            })
        }

        func cleanUp() {
            fixtures.forEach { try? FileManager.default.removeItem(at: $0.directory) }
            try? FileManager.default.removeItem(at: folder)
        }

        /// A proposal of `entries` for `version` by vantage point `index`'s key, with `approvals`
        /// and that key's signature: what a compromised vantage point writes.
        func propose(as index: Int, entries: [FingerprintEntry], version: Int64 = 1, certificateTransparency: Data? = nil,
                     approvals: [PublisherState.Approval] = []) async throws -> Data {
            let signer = try KeyFileSigner(privateKey: keys[index])
            let now = Int64(clock.now().timeIntervalSince1970)
            let body = try await ListAssembly(entrySigner: signer).unsignedBody(entries: entries, version: version, timestamp: now, expires: now + 7 * 86_400,
                                                                                certificateTransparency: certificateTransparency)
            try shared.create(Proposal(version: version, proposer: "vantage\(index)", body: body, approvals: approvals))
            let signature = try await signer.sign(try ListAssembly.labelledMessage(of: body))
            try shared.add(ProposalSignature(version: version, bodySHA256: StateFile.hex(SHA256Digest.hash(body)), keyID: signer.keyID,
                                             signature: signature.base64EncodedString(), signer: "vantage\(index)"))
            return body
        }
    }

    static func entry(_ identity: TestIdentity) -> FingerprintEntry {
        FingerprintEntry(name: host, fingerprint: identity.certificate.fingerprint, expires: Int64(identity.certificate.notAfter.timeIntervalSince1970))
    }

    static func approval(of identity: TestIdentity, changeOf: TestIdentity? = nil, by key: P256PrivateKey) throws -> PublisherState.Approval {
        let leaf = identity.certificate.fingerprintBase64
        let change = PublicationRules.changeID(partnerID: EndToEndFixture.partnerID, leafSHA256: (changeOf ?? identity).certificate.fingerprintBase64)
        let message = PublicationRules.approvalMessage(changeID: change, partnerID: EndToEndFixture.partnerID, leafSHA256: leaf,
                                                       kind: .leafCertificate, pin: leaf)
        return PublisherState.Approval(changeID: change, partnerID: EndToEndFixture.partnerID, leafSHA256: leaf, kind: .leafCertificate, pin: leaf,
                                       keyID: try KeyFileSigner(privateKey: key).keyID,
                                       signature: try key.signature(for: message).base64EncodedString(), approvedAt: Date())
    }

    /// The round (1-based) at which a client reading vantage point 1 first holds a list pinning
    /// the real leaf, within `rounds`; nil when never.
    static func roundOfFirstList(_ group: Group, client: PinnedClient, pki: TestPKI, rounds: Int, order: [Int]? = nil,
                                 beforeEachRound: () async throws -> Void = {}) async throws -> Int? {
        for round in 1...rounds {
            try await beforeEachRound()
            await group.round(order: order)
            if await client.update() == .ok, PublisherEndToEndTests.listPins(client, pki.leaf) { return round }
        }
        return nil
    }

    enum CompromisedMove: String, CaseIterable, CustomStringConvertible {
        /// An "approval" of the impostor signed with the compromised vantage point's list key.
        case approvalWithItsListKey
        /// A genuine approval of another change copied beside one under the same change ID
        /// naming the compromised key and the impostor.
        case replayedApprovalUnderItsOwnKey
        /// The real pin, but a CT section of its own (the partner no longer under CT).
        case itsOwnCTSection
        var description: String { rawValue }
    }

    @Test(arguments: CompromisedMove.allCases)
    func aCompromisedVantagePointBelowTheThresholdCannotSteerTheList(_ move: CompromisedMove) async throws {
        let pki = try TestPKI(hosts: [Self.host])
        let genuineOther = try pki.issueLeaf(for: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf, pki.impostor]) { servers in
            // Vantage point 0 is compromised (host and key); 1 and 2 are honest, and 1 also sees
            // the impostor on one address (so it has staged it: the case approvals are for).
            let approver = try P256PrivateKey()
            let approverKey = try approver.publicKey.x963Representation.base64EncodedString()
            let honestPartner: [String: Any] = ["anchors": "both-roots.pem"]
            let group = try Group(pki: pki, k: 2, ports: [[servers[0].port], [servers[0].port, servers[1].port], [servers[0].port]],
                                  partner: [1: honestPartner, 2: honestPartner])
            defer { group.cleanUp() }
            for fixture in group.fixtures {
                var file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: fixture.file("publication.json"))) as? [String: Any])
                file["approverKeys"] = [approverKey]
                try JSONSerialization.data(withJSONObject: file).write(to: fixture.file("publication.json"))
            }
            let publishers = try group.fixtures.map { try $0.publisher() }
            // The honest ones see what they see for K rounds; the compromised one moves first each round.
            var bodies: [Data] = []
            for _ in 0..<6 {
                group.clock.advance(group.fixtures[0].probeInterval)
                for publisher in publishers[1...] { await publisher.probe() }
                let version = (await publishers[1].state.lastPublished?.version ?? 0) + 1
                switch move {
                case .approvalWithItsListKey:
                    bodies.append(try await group.propose(as: 0, entries: [Self.entry(pki.impostor), Self.entry(pki.leaf)], version: version,
                                                          approvals: [try Self.approval(of: pki.impostor, by: group.keys[0])]))
                case .replayedApprovalUnderItsOwnKey:
                    bodies.append(try await group.propose(as: 0, entries: [Self.entry(pki.impostor), Self.entry(pki.leaf)], version: version,
                                                          approvals: [try Self.approval(of: genuineOther, by: approver),
                                                                      try Self.approval(of: pki.impostor, changeOf: genuineOther, by: group.keys[0])]))
                case .itsOwnCTSection:
                    let section = try TestCTLogList(logs: [TestCTLogList.Log(try TestCTLog(), operatorName: "elsewhere")]).json()
                    bodies.append(try await group.propose(as: 0, entries: [Self.entry(pki.leaf)], version: version, certificateTransparency: section))
                }
                for publisher in publishers[1...] { await publisher.cycle() }
            }
            // No honest key signed any of its bodies, so none was finished; the honest ones
            // published the real leaf by themselves, with no section of the attacker's.
            let honestKeyIDs = try group.keys[1...].map { try KeyFileSigner(privateKey: $0).keyID }
            for version in Int64(1)...3 {
                for (_, signature) in group.shared.signatures(version).objects where honestKeyIDs.contains(signature.keyID) {
                    #expect(!bodies.contains { StateFile.hex(SHA256Digest.hash($0)) == signature.bodySHA256 },
                            "an honest vantage point co-signed the compromised one's \(move) proposal")
                }
            }
            #expect(!group.servedFingerprints().contains(pki.impostor.certificate.fingerprintBase64))
            let served = try Data(contentsOf: group.fixtures[1].listURL)
            #expect((try JSONSerialization.jsonObject(with: served) as? [String: Any])?["certificateTransparency"] == nil)
            #expect(try ListReadBack.parse(served).entries.map(\.entry.fingerprint) == [pki.leaf.certificate.fingerprint])
        }
    }

    @Test func anEmptyFarFutureListFileFreezesNoClientAndCrashesNoPublisher() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf]) { servers in
            let group = try Group(pki: pki, k: 2, ports: [[servers[0].port], [servers[0].port]])
            defer { group.cleanUp() }
            // Written by someone with no key at all, in the old and the new naming.
            for name in ["list-9223372036854775806.json", SharedProposals.name(.list, version: 9_223_372_036_854_775_806, bytes: Data()),
                         SharedProposals.name(.list, version: .max, bytes: Data())] {
                try Data().write(to: group.folder.appendingPathComponent(name))
            }
            let client = try await group.client(pki: pki, k: 2, reading: 1)
            let round = try await Self.roundOfFirstList(group, client: client, pki: pki, rounds: 8)
            #expect(round != nil)
            #expect(await group.publishers[1].state.lastPublished?.version == 1)
            // And the next list follows it: version 2 at the next re-signing, as always.
            group.clock.advance(86_400)
            await group.round()
            #expect(await client.update() == .ok)
            #expect(await group.publishers[1].state.lastPublished?.version == 2)
            try await client.shutdown()
        }
    }

    @Test func aSparseGigabyteFileAndAJunkProposalFromTheFutureStallNothing() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf]) { servers in
            let group = try Group(pki: pki, k: 2, ports: [[servers[0].port], [servers[0].port]])
            defer { group.cleanUp() }
            // A 1 GiB sparse file under a proposal's and a list's name for version 1.
            for kind in ["proposal", "list"] {
                let descriptor = open(group.folder.appendingPathComponent("\(kind)-1-\(String(repeating: "0", count: 64)).json").path, O_CREAT | O_WRONLY, 0o644)
                #expect(descriptor >= 0)
                #expect(ftruncate(descriptor, 1 << 30) == 0)
                close(descriptor)
            }
            // A junk proposal for version 1 that hashes to its name, and one under the old name,
            // both modified in the year 2100.
            let junk = Data("{\"format\": 2, \"version\": 1, \"proposer\": \"x\", \"body\": \"\", \"approvals\": []}".utf8)
            for name in [SharedProposals.name(.proposal, version: 1, bytes: junk), "proposal-1.json"] {
                let url = group.folder.appendingPathComponent(name)
                try junk.write(to: url)
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 4_102_444_800)], ofItemAtPath: url.path)
            }
            let client = try await group.client(pki: pki, k: 2, reading: 1)
            let round = try await Self.roundOfFirstList(group, client: client, pki: pki, rounds: 8)
            // K = 3 sightings over 2 minutes: rules met at round 3, published in that round or the next.
            #expect(round != nil && round! <= 4, "first list at round \(round.map(String.init) ?? "never")")
            #expect(await group.publishers[1].state.lastPublished?.version == 1)
            try await client.shutdown()
        }
    }

    /// Three vantage points, threshold 2, the default `proposalTimeout`: one is intercepted (it
    /// sees the impostor, and its file allows the impostor's CA, so its own rules publish it) and
    /// cycles first in every round. The real list comes within one round of a clean run's, as
    /// version 1, and the impostor's pin never reaches a list.
    @Test func anInterceptedVantagePointProposingFirstEveryRoundCostsAtMostOneRound() async throws {
        let pki = try TestPKI(hosts: [Self.host])
        try await PublisherEndToEndTests.withServers([pki.leaf, pki.impostor]) { servers in
            func firstRound(intercepted: Bool) async throws -> (round: Int?, version: Int64?, served: Set<String>) {
                let allowsImpostor: [String: Any] = ["anchors": "both-roots.pem", "allowedCAs": ["intermediate.pem", "both-roots.pem"]]
                let group = try Group(pki: pki, k: 2, ports: [[servers[intercepted ? 1 : 0].port], [servers[0].port], [servers[0].port]],
                                      partner: intercepted ? [0: allowsImpostor] : [:])
                defer { group.cleanUp() }
                let client = try await group.client(pki: pki, k: 2, reading: 1)
                defer { Task { try? await client.shutdown() } }
                let round = try await Self.roundOfFirstList(group, client: client, pki: pki, rounds: 10, order: [0, 1, 2])
                // A few more rounds: the impostor must never be published.
                for _ in 0..<3 { await group.round(order: [0, 1, 2]) }
                let first = await group.publishers[1].state.lastPublished?.version
                return (round, first, group.servedFingerprints())
            }
            let clean = try await firstRound(intercepted: false)
            let attacked = try await firstRound(intercepted: true)
            let cleanRound = try #require(clean.round)
            let attackedRound = try #require(attacked.round, "the intercepted run never published the real list")
            #expect(attackedRound <= cleanRound + 1, "clean: round \(cleanRound); intercepted: round \(attackedRound)")
            #expect(attacked.version == 1, "the first real list is version \(attacked.version.map(String.init) ?? "none")")
            #expect(!attacked.served.contains(pki.impostor.certificate.fingerprintBase64))
            #expect(attacked.served.contains(pki.leaf.certificate.fingerprintBase64))
        }
    }
}
