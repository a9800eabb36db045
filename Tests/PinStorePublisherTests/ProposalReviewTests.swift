import Foundation
import Testing
import PinStore
import PinStoreSigning
import PinStoreTesting
@testable import PinStorePublisher

/// What an honest vantage point co-signs: only the bytes it would write itself. Each test is
/// one move of a compromised vantage point (or of a writer of the medium) against a reviewer
/// that probed the partner itself (the real chain validation against the test PKI).
@Suite struct ProposalReviewTests {
    /// A reviewer that saw `sees` three times over 20 minutes, and the other list key (the
    /// compromised vantage point's).
    struct Reviewer {
        let pki: TestPKI
        let clock = TestClock()
        let fixture: PublisherFixture
        let publisher: Publisher
        let other: P256PrivateKey
        let approver: P256PrivateKey

        init(sees: [TestIdentity], pki: TestPKI, extra: String = "") async throws {
            self.pki = pki
            fixture = try PublisherFixture(pki: pki)
            other = try P256PrivateKey()
            approver = try P256PrivateKey()
            let otherKey = try other.publicKey.x963Representation.base64EncodedString()
            let approverKey = try approver.publicKey.x963Representation.base64EncodedString()
            let file = try fixture.file(#", "threshold": 2, "otherPublisherKeys": ["\#(otherKey)"], "approverKeys": ["\#(approverKey)"], "vantagePoint": {"name": "reviewer"}"# + extra)
            let prober = PresentingProber(trustRoots: .anchors([pki.root, pki.impostorRoot]), clock: clock)
            prober.present(Dictionary(uniqueKeysWithValues: sees.enumerated().map { ("127.0.0.\($0.offset + 1):443", $0.element.chainDER) }))
            publisher = try Publisher(setup: try PublisherSetup(file: file), prober: prober, clock: clock, medium: InMemoryMedium())
            for step in 0..<3 {
                if step > 0 { clock.advance(600) }
                await publisher.probe()
            }
        }

        func cleanUp() { fixture.cleanUp() }

        /// The review of `proposal` for version 1 now.
        func review(_ proposal: Proposal) async -> String? {
            let now = clock.now()
            let plan = await publisher.plan(at: now)
            return ProposalReview.problem(with: proposal, view: await publisher.reviewView(plan: plan, version: 1, now: now))
        }

        func entry(_ identity: TestIdentity, expires: Date? = nil) -> FingerprintEntry {
            FingerprintEntry(name: "localhost", fingerprint: identity.certificate.fingerprint,
                             expires: Int64((expires ?? identity.certificate.notAfter).timeIntervalSince1970))
        }

        /// A proposal by the other key: `entries`, version 1, times relative to the clock.
        func proposal(_ entries: [FingerprintEntry], version: Int64 = 1, age: TimeInterval = 0, lifetime: TimeInterval = 7 * 86_400,
                      certificateTransparency: Data? = nil, crl: CRLHostList.Wire? = nil, revocations: [ListRevocations.Wire] = [],
                      approvals: [PublisherState.Approval] = []) async throws -> Proposal {
            let now = clock.now().timeIntervalSince1970
            let body = try await ListAssembly(entrySigner: try KeyFileSigner(privateKey: other))
                .unsignedBody(entries: entries, version: version, timestamp: Int64(now - age), expires: Int64(now - age + lifetime),
                              certificateTransparency: certificateTransparency, revocations: revocations, crl: crl)
            return Proposal(version: version, proposer: "other", body: body, approvals: approvals)
        }

        /// An approval of `identity`'s change by `key`, for `pin` (its own pin unless given).
        func approval(of identity: TestIdentity, pin: String? = nil, changeOf: TestIdentity? = nil, by key: P256PrivateKey) throws -> PublisherState.Approval {
            let leaf = identity.certificate.fingerprintBase64
            let change = PublicationRules.changeID(partnerID: "api", leafSHA256: (changeOf ?? identity).certificate.fingerprintBase64)
            let pin = pin ?? leaf
            let message = PublicationRules.approvalMessage(changeID: change, partnerID: "api", leafSHA256: leaf, kind: .leafCertificate, pin: pin)
            return PublisherState.Approval(changeID: change, partnerID: "api", leafSHA256: leaf, kind: .leafCertificate, pin: pin,
                                           keyID: try KeyFileSigner(privateKey: key).keyID,
                                           signature: try key.signature(for: message).base64EncodedString(), approvedAt: Date())
        }
    }

    static let pki = Result { try TestPKI(hosts: ["localhost"]) }

    @Test func aProposalOfWhatThisVantagePointSawIsSigned() async throws {
        let reviewer = try await Reviewer(sees: [try Self.pki.get().leaf], pki: try Self.pki.get())
        defer { reviewer.cleanUp() }
        #expect(await reviewer.review(try await reviewer.proposal([reviewer.entry(reviewer.pki.leaf)])) == nil)
    }

    @Test func aPinThisVantagePointNeverSawIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let problem = await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf), reviewer.entry(pki.impostor)]))
        #expect(problem?.contains("not supported by this vantage point's own observations") == true)
    }

    @Test func anApprovalSignedWithAListKeyIsIgnored() async throws {
        let pki = try Self.pki.get()
        // The reviewer saw the impostor too (staged: its CA is not allowed); the other vantage
        // point "approves" it with its own list key.
        let reviewer = try await Reviewer(sees: [pki.leaf, pki.impostor], pki: pki)
        defer { reviewer.cleanUp() }
        let proposal = try await reviewer.proposal([reviewer.entry(pki.impostor), reviewer.entry(pki.leaf)],
                                                   approvals: [try reviewer.approval(of: pki.impostor, by: reviewer.other)])
        #expect(await reviewer.review(proposal)?.contains("not supported") == true)
    }

    @Test func anApproverKeysApprovalOfAChangeThisVantagePointStagedIsHonoured() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf, pki.impostor], pki: pki)
        defer { reviewer.cleanUp() }
        let proposal = try await reviewer.proposal([reviewer.entry(pki.impostor), reviewer.entry(pki.leaf)],
                                                   approvals: [try reviewer.approval(of: pki.impostor, by: reviewer.approver)])
        #expect(await reviewer.review(proposal) == nil)
    }

    @Test func anApproverKeysApprovalOfAChangeThisVantagePointNeverStagedIsIgnored() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let proposal = try await reviewer.proposal([reviewer.entry(pki.impostor), reviewer.entry(pki.leaf)],
                                                   approvals: [try reviewer.approval(of: pki.impostor, by: reviewer.approver)])
        #expect(await reviewer.review(proposal)?.contains("not supported") == true)
    }

    @Test func aGenuineApprovalReplayedBesideOneNamingAnotherKeyAndPinIsIgnored() async throws {
        let pki = try Self.pki.get()
        let other = try pki.issueLeaf(for: ["localhost"])
        let reviewer = try await Reviewer(sees: [pki.leaf, pki.impostor], pki: pki)
        defer { reviewer.cleanUp() }
        // A genuine approval of another change, and one under the same change ID, by the
        // compromised list key, for the impostor's leaf and pin.
        let genuine = try reviewer.approval(of: other, by: reviewer.approver)
        let forged = try reviewer.approval(of: pki.impostor, changeOf: other, by: reviewer.other)
        let proposal = try await reviewer.proposal([reviewer.entry(pki.impostor), reviewer.entry(pki.leaf)], approvals: [genuine, forged])
        #expect(await reviewer.review(proposal)?.contains("not supported") == true)
    }

    @Test func anApprovalWhosePinIsNotTheStagedChangesIsIgnored() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf, pki.impostor], pki: pki)
        defer { reviewer.cleanUp() }
        // Signed by the approver, for the impostor's change, but naming another pin.
        let approval = try reviewer.approval(of: pki.impostor, pin: pki.intermediate.spkiSHA256Base64, by: reviewer.approver)
        let proposal = try await reviewer.proposal([reviewer.entry(pki.impostor), reviewer.entry(pki.leaf)], approvals: [approval])
        #expect(await reviewer.review(proposal)?.contains("not supported") == true)
    }

    @Test func aProposalWithAnotherCTSectionIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let section = try TestCTLogList(logs: [TestCTLogList.Log(try TestCTLog(), operatorName: "elsewhere")]).json()
        let problem = await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], certificateTransparency: section))
        #expect(problem?.contains("is not the list this vantage point would write") == true)
    }

    @Test func aProposalWithAnotherCRLSectionIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let crl = CRLHostList.Wire(hosts: [CTLogList.Wire.Host(name: "localhost", mode: "reportOnly")])
        #expect(await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], crl: crl))?.contains("would write") == true)
    }

    @Test func aProposalThatAddsARevocationIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let revocations = [ListRevocations.Wire(kind: "certificate", sha256: pki.leaf.certificate.fingerprintBase64)]
        #expect(await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], revocations: revocations))?.contains("would write") == true)
    }

    @Test func aProposalForAnyVersionButOneAboveTheListInForceIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        for version: Int64 in [2, 9_223_372_036_854_775_806] {
            #expect(await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], version: version))?.contains("is not 1") == true)
        }
    }

    @Test func aBackDatedProposalIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let problem = await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], age: 2 * 3_600))
        #expect(problem?.contains("older than proposalTimeout") == true)
    }

    @Test func aFutureDatedProposalIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        #expect(await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], age: -3_600))?.contains("in the future") == true)
    }

    @Test func aListThatWouldOutliveExpiresIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let problem = await reviewer.review(try await reviewer.proposal([reviewer.entry(pki.leaf)], lifetime: 365 * 86_400))
        #expect(problem?.contains("longer than") == true)
    }

    @Test func anEntryThatOutlivesItsCertificateIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        let entry = reviewer.entry(pki.leaf, expires: pki.leaf.certificate.notAfter.addingTimeInterval(365 * 86_400))
        #expect(await reviewer.review(try await reviewer.proposal([entry]))?.contains("expires later") == true)
    }

    @Test func aProposalThatLeavesOutAPinOfThisVantagePointsPlanIsNotSigned() async throws {
        let pki = try Self.pki.get()
        let reviewer = try await Reviewer(sees: [pki.leaf], pki: pki)
        defer { reviewer.cleanUp() }
        // Version 1 pins the leaf, signed by both keys (the reviewer's in its own cycle).
        let first = try await reviewer.proposal([reviewer.entry(pki.leaf)])
        let medium = await reviewer.publisher.shared
        try medium.create(first)
        await reviewer.publisher.cycle()                  // signs it
        let body = try #require(first.bodyBytes)
        let other = try KeyFileSigner(privateKey: reviewer.other)
        let signature = try await other.sign(try ListAssembly.labelledMessage(of: body))
        try medium.add(ProposalSignature(version: 1, bodySHA256: StateFile.hex(SHA256Digest.hash(body)), keyID: other.keyID,
                                         signature: signature.base64EncodedString(), signer: "other"))
        await reviewer.publisher.cycle()                  // finishes and publishes it
        #expect(await reviewer.publisher.state.lastPublished?.version == 1)
        let now = reviewer.clock.now()
        let plan = await reviewer.publisher.plan(at: now)
        let empty = try await reviewer.proposal([], version: 2)
        let problem = ProposalReview.problem(with: empty, view: await reviewer.publisher.reviewView(plan: plan, version: 2, now: now))
        #expect(problem?.contains("leaves out pin") == true)
    }
}
