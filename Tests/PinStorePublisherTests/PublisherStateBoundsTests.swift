import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// Issue 45, item 3: a partner cannot fill the publisher's state. Real state files, the real
/// rules and `ChainValidator`; the clock is moved by hand.
@Suite struct PublisherStateBoundsTests {
    static let hostile = "hostile.pinstore.test"

    /// The state file's size on disk.
    static func size(_ url: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
    }

    /// What one partner takes in the state file: its record, its pins and their entries in the
    /// last list's record, encoded as `StateFile` encodes them.
    static func share(of partnerID: String, in state: PublisherState, host: String) throws -> Int {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        let record = try encoder.encode(state.partners[partnerID] ?? PublisherState.PartnerRecord()).count
        let pins = try encoder.encode(state.publishedPins.filter { $0.partnerID == partnerID }).count
        let entries = try encoder.encode(state.lastPublished?.entries.filter { $0.hasPrefix("\(host) ") } ?? []).count
        return record + pins + entries
    }

    /// The issue's attack at the publisher's own scale: every probe, a partner presents a new
    /// certificate with a 12 KB subject (under the probe's certificate limit) at each of 80
    /// addresses it has not used before, half of them valid for its name and half not. Without
    /// the bounds the file grows by about 1 MB a round; with them it stays under the bound,
    /// each cap is reached, and the other partner's rotation is still published.
    @Test func aPartnerRotatingABigSubjectCertificateAtEveryProbeFromManyAddressesStaysUnderTheBound() async throws {
        let pki = try TestPKI(hosts: ["localhost", Self.hostile])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let ca = pki.intermediate.spkiSHA256Base64
        let file = try fixture.file(morePartners: #", {"id": "hostile", "host": "\#(Self.hostile)", "allowedCAs": ["\#(ca)"]}"#)
        let prober = PresentingProber(trustRoots: pki.trustRoots, clock: clock)
        prober.present(["127.0.0.1:443": pki.leaf.chainDER], forHost: "localhost")
        let publisher = try Publisher(file: file, prober: prober, clock: clock)
        let renewed = try pki.issueLeaf(for: ["localhost"])
        let addresses = PublisherState.Bounds.addresses + 16
        let bound = file.partners.count * PublisherState.Bounds.bytesPerPartner

        for round in 0..<8 {
            var presented: [String: [Data]] = [:]
            for index in 0..<addresses {
                // Even addresses: valid for the partner's name (kept whole, up to the cap); odd:
                // for another name (refused: a digest).
                let names = index.isMultiple(of: 2) ? [Self.hostile] : ["elsewhere.pinstore.test"]
                presented["10.\(round).\(index / 256).\(index % 256):443"] = try pki.issueLeaf(for: names, subjectPadding: 12_000).chainDER
            }
            prober.present(presented, forHost: Self.hostile)
            // The honest partner renews its certificate halfway.
            if round == 4 { prober.present(["127.0.0.1:443": renewed.chainDER], forHost: "localhost") }
            if round > 0 { clock.advance(600) }
            await publisher.probe()
            #expect(await publisher.cycle(), "round \(round)")
            let size = try Self.size(fixture.stateURL)
            #expect(size <= bound, "round \(round): the state file takes \(size) bytes, more than \(bound)")
        }

        let state = await publisher.state
        let record = try #require(state.partners["hostile"])
        #expect(record.addresses.count == PublisherState.Bounds.addresses)
        #expect(record.certificates.count == PublisherState.Bounds.certificates)
        #expect(record.refusedLeaves.count == PublisherState.Bounds.refusedLeaves)
        #expect(record.forgottenLeaves > 0)
        #expect(record.certificates.values.allSatisfy { $0.subject.utf8.count <= PublisherState.Bounds.textBytes })
        let share = try Self.share(of: "hostile", in: state, host: Self.hostile)
        #expect(share <= PublisherState.Bounds.bytesPerPartner, "the hostile partner takes \(share) bytes")

        // The other partner kept publishing: its renewed certificate is in the list, and a
        // restart reads the state back.
        let list = try ListAcceptance.checkPublishable(try Data(contentsOf: fixture.listURL), keys: [try fixture.key.publicKey], threshold: 1,
                                                       previousVersion: nil, previousTimestamp: nil, at: clock.now())
        #expect(list.entries.map(\.fingerprint).contains(renewed.certificate.fingerprint))
        let restarted = try Publisher(file: file, prober: prober, clock: clock)
        let status = await restarted.status()
        #expect(status.listVersion == list.version)
        #expect(status.partners.map(\.id) == ["api", "hostile"])
    }

    /// The bound's arithmetic: a record filled to every cap with the longest words each field
    /// keeps (Base64 values made of `/`, which JSON escapes; the longest host name; the largest
    /// counts) still takes no more than ``PublisherState/Bounds/bytesPerPartner``.
    @Test func aRecordFilledToEveryCapTakesNoMoreThanTheBound() throws {
        typealias Bounds = PublisherState.Bounds
        let host = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "." + String(repeating: "c", count: 63) + "."
            + String(repeating: "d", count: 61)   // 253 characters, the longest DNS name
        let hostile = String(repeating: "\"/\\é\u{1F600}", count: 1_000)
        var index = 0
        func hash() -> String {
            index += 1
            let digits = String(index)
            return String(repeating: "/", count: 43 - digits.count) + digits + "="
        }
        let date = Date(timeIntervalSince1970: 1_999_999_999.999)
        var record = PublisherState.PartnerRecord()
        for _ in 0..<Bounds.addresses {
            record.addresses[Bounds.text(hash() + hostile, bytes: Bounds.addressBytes)] = .init(lastObserved: date, leafSHA256: hash())
        }
        for _ in 0..<Bounds.certificates {
            let leaf = hash()
            record.certificates[leaf] = PublisherState.SeenCertificate(
                leafSHA256: leaf, spkiSHA256: hash(), issuerSPKISHA256: hash(), issuerNotAfter: date,
                caSPKIs: (0..<Bounds.caSPKIsPerCertificate).map { _ in hash() }, subject: Bounds.text(hostile, bytes: Bounds.textBytes),
                notBefore: date, notAfter: date, firstSeen: date, lastSeen: date, sightings: .max,
                addresses: (0..<Bounds.addressesPerCertificate).map { _ in Bounds.text(hash() + hostile, bytes: Bounds.addressBytes) },
                certificateTransparency: .init(compliant: false, detail: Bounds.text(hostile, bytes: Bounds.textBytes)),
                validationFailure: Bounds.text(hostile, bytes: Bounds.textBytes))
        }
        for _ in 0..<Bounds.refusedLeaves {
            record.noteRefused(hash(), outcome: "chainDidNotValidate", detail: hostile, subject: hostile, notAfter: date, at: date, adding: .max)
        }
        record.trustedCAs = (0..<Bounds.trustedCAs).map { _ in hash() }
        record.lastProbe = date
        record.lastProbeFailure = Bounds.text(hostile, bytes: Bounds.probeFailureBytes)
        record.forgottenLeaves = .max
        var state = PublisherState()
        state.partners[String(repeating: "p", count: 64)] = record
        state.publishedPins = (0..<PublicationRules.maximumPinsPerPartner).map { _ in
            .init(partnerID: String(repeating: "p", count: 64), name: host, kind: .leafCertificate, value: hash(), expires: .max,
                  source: "observed", notServedSince: date)
        }
        state.lastPublished = .init(version: 1, timestamp: 1, expires: 1, sha256: "x", publishedAt: date,
                                    entries: state.publishedPins.map { "\(host) certificate \($0.value) \(Int64.max)" })
        let share = try Self.share(of: String(repeating: "p", count: 64), in: state, host: host)
        // 136,287 bytes when the bounds were set.
        #expect(share <= Bounds.bytesPerPartner, "a record at every cap takes \(share) bytes")
    }

    @Test func aLeafThatNeverValidatesIsKeptAsADigestWithCountsAndShownAsPending() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let prober = PresentingProber(trustRoots: pki.trustRoots, clock: clock)
        // The impostor's chain does not lead to the partner's anchors; two addresses present it.
        prober.present(["127.0.0.1:443": pki.impostor.chainDER, "127.0.0.2:443": pki.impostor.chainDER])
        let publisher = try Publisher(file: try fixture.file(), prober: prober, clock: clock)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)

        let record = try #require(await publisher.state.partners["api"])
        #expect(record.certificates.isEmpty)
        let digest = try #require(record.refusedLeaves.first)
        #expect(record.refusedLeaves.count == 1)
        #expect(digest.leafSHA256 == pki.impostor.certificate.fingerprintBase64)
        #expect(digest.outcome == "chainDidNotValidate")
        #expect(digest.presentations == 3)   // one per probe, however many addresses presented it
        #expect(digest.lastSeen.timeIntervalSince(digest.firstSeen) == 1_200)
        let pending = await publisher.pending()
        #expect(pending.map(\.leafSHA256) == [digest.leafSHA256])
        #expect(pending.first?.outcome.code == "chainDidNotValidate")
        #expect(pending.first?.needsPerson == true)
    }

    @Test func aLeafExpiringWithinTheMinimumIsADigestUnlessAPublishedPinNeedsIt() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        // Valid, but for 12 more hours: under the default minimumRemainingValidity of a day.
        let expiring = try pki.issueLeaf(for: ["localhost"], validity: DateInterval(start: clock.now() - 3_600, end: clock.now() + 43_200))
        let (publisher, prober) = try PublisherTests.publisher(fixture, clock: clock)
        await PublisherTests.probeThreeTimes(publisher, clock: clock)
        #expect(await publisher.cycle())
        prober.present(["127.0.0.1:443": pki.leaf.chainDER, "127.0.0.2:443": expiring.chainDER])
        clock.advance(600)
        await publisher.probe()
        clock.advance(600)
        await publisher.probe()

        let record = try #require(await publisher.state.partners["api"])
        #expect(record.certificates.keys.sorted() == [pki.leaf.certificate.fingerprintBase64])
        let digest = try #require(record.refusedLeaves.first)
        #expect(digest.outcome == "expiresTooSoon")
        #expect(digest.presentations == 2)
        #expect(await publisher.pending().map(\.outcome.code) == ["expiresTooSoon"])
    }

    /// A state file as the version before the bounds wrote it (no digests, no forgotten count,
    /// announcements without deployment, 40 certificates no one presents) loads, and is cut to
    /// the bounds at once.
    @Test func aStateFileWrittenBeforeTheBoundsLoadsAndIsCut() async throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let fixture = try PublisherFixture(pki: pki)
        defer { fixture.cleanUp() }
        let clock = TestClock()
        let now = Int(clock.now().timeIntervalSince1970)
        let leaf = pki.leaf.certificate
        let ca = pki.intermediate.spkiSHA256Base64
        func certificate(_ hash: String, spki: String? = nil, sightings: Int, failure: String? = nil) -> String {
            #"""
            "\#(hash)": {"addresses": ["127.0.0.1:443"], "caSPKIs": ["\#(ca)"], "firstSeen": \#(now - 7_200), "issuerNotAfter": \#(now + 400 * 86_400), "issuerSPKISHA256": "\#(ca)", "lastSeen": \#(now - 3_600), "leafSHA256": "\#(hash)", "notAfter": \#(now + 20 * 86_400), "notBefore": \#(now - 86_400), "sightings": \#(sightings), "spkiSHA256": "\#(spki ?? hash)", "subject": "O=PinStoreTesting, CN=localhost"\#(failure.map { #", "validationFailure": "\#($0)""# } ?? "")}
            """#
        }
        let old = (0..<40).map { certificate(String(format: "old%041d=", $0), sightings: 2) }
            + [certificate(leaf.fingerprintBase64, spki: leaf.spkiSHA256Base64, sightings: 5), certificate("refused" + String(repeating: "0", count: 36) + "=", sightings: 0, failure: "unknownIssuer")]
        let json = #"""
        {"announcements": [{"announcedAt": \#(now - 60), "expires": \#(now + 90 * 86_400), "partnerID": "api", "spkiSHA256": "\#(leaf.spkiSHA256Base64)"}],
         "approvals": [],
         "lastPublished": {"entries": ["localhost certificate \#(leaf.fingerprintBase64) \#(now + 20 * 86_400)"], "expires": \#(now + 6 * 86_400), "publishedAt": \#(now - 86_400), "sha256": "x", "timestamp": \#(now - 86_400), "version": 7},
         "partners": {"api": {"addresses": {"127.0.0.1:443": {"lastObserved": \#(now - 3_600), "leafSHA256": "\#(leaf.fingerprintBase64)"}},
                              "certificates": {\#(old.joined(separator: ", "))},
                              "lastProbe": \#(now - 3_600), "trustedCAs": ["\#(ca)"]}},
         "publishedPins": [{"expires": \#(now + 20 * 86_400), "kind": "leafCertificate", "name": "localhost", "partnerID": "api", "source": "observed", "value": "\#(leaf.fingerprintBase64)"}]}
        """#
        let body = Data(json.utf8)
        try FileManager.default.createDirectory(at: fixture.stateURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (Data((StateFile.magic + StateFile.hex(SHA256Digest.hash(body)) + "\n").utf8) + body).write(to: fixture.stateURL)

        let (publisher, _) = try PublisherTests.publisher(fixture, clock: clock)
        let state = await publisher.state
        let record = try #require(state.partners["api"])
        #expect(state.lastPublished?.version == 7)
        #expect(state.announcements.map(\.firstPresented) == [nil])
        #expect(record.certificates.count == PublisherState.Bounds.certificates)
        #expect(record.certificates[leaf.fingerprintBase64]?.sightings == 5)   // presented and pinned: kept first
        #expect(record.refusedLeaves.map(\.outcome) == ["chainDidNotValidate"])
        #expect(record.forgottenLeaves == 41 - PublisherState.Bounds.certificates)
        #expect(await publisher.status().listVersion == 7)
        // The next probe sees the announced key presented (the leaf carries it), and saves.
        await publisher.probe()
        #expect(try StateFile(url: fixture.stateURL).load().announcements.first?.firstPresented != nil)
    }

    @Test func aStateLargerThanWhatIsReadBackIsNeverWritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = StateFile(url: folder.appendingPathComponent("state.json"), sizeLimit: 4_096)
        var state = PublisherState()
        state.partners["api"] = PublisherState.PartnerRecord()
        try file.save(state)
        var large = state
        large.approvals = (0..<100).map { index in
            .init(changeID: "\(index)", partnerID: "api", leafSHA256: "leaf", kind: .leafKey, pin: "pin", keyID: "key",
                  signature: String(repeating: "A", count: 96), approvedAt: Date(timeIntervalSince1970: 1))
        }
        let error = #expect(throws: PublisherError.self) { try file.save(large) }
        #expect(error?.code == .stateFile)
        #expect(error?.reason.contains("previous state file stays") == true)
        #expect(try file.load() == state)
    }

    @Test func wordsFromACertificateAreCutToTheirJSONBound() throws {
        let hostile = String(repeating: "O=\"/\\\u{0}é漢\u{1F600}", count: 6_000)   // about 60 KB
        let cut = PublisherState.Bounds.text(hostile, bytes: 256)
        let encoder = JSONEncoder()
        let encoded = try encoder.encode([cut])
        #expect(encoded.count - 4 <= 256)   // minus `["` and `"]`
        #expect(cut.hasSuffix("\u{2026}"))
        #expect(!cut.unicodeScalars.contains { $0.value < 0x20 })
        #expect(PublisherState.Bounds.text("CN=api.example", bytes: 256) == "CN=api.example")
    }
}
