import Foundation
import PinStoreTesting
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The CRL check without sockets: CRLs made by the test kit through OpenSSL and verified by
/// ``CertificateRevocationList``, the refresh schedule, the signed list's `crl` section, and the
/// leaf view (AsyncHTTPClient), which cannot check CRLs and must not skip them.
@Suite struct CRLCheckTests {
    static let now = Int64(Date().timeIntervalSince1970)
    static let url = "http://127.0.0.1:1/intermediate.crl"

    static func verified(_ der: Data, pki: TestPKI, issuer: X509Certificate? = nil) throws(CRLUnavailable) -> CertificateRevocationList {
        let issuer = issuer ?? pki.intermediate
        let key = Digest32(SHA256Digest.hash(issuer.subjectPublicKeyInfo))!
        return try CertificateRevocationList(der: der, url: url, issuer: issuer.derRepresentation, issuerKey: key, now: now)
    }

    // MARK: Parsing and verification

    @Test func aCRLListsTheSerialOfTheCertificateItRevokes() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let crl = try Self.verified(try pki.crl(by: .intermediate, revoking: [pki.leaf.certificate]), pki: pki)
        let subject = try #require(CRLSubject.of(pki.leaf.certificate.derRepresentation,
                                                 fingerprint: Digest32(SHA256Digest.hash(pki.leaf.certificate.derRepresentation))!))
        #expect(crl.revoked[subject.serial] != nil)
    }

    @Test func aCRLVerifiedForTheWrongIssuerIsRefused() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let error = #expect(throws: CRLUnavailable.self) {
            _ = try Self.verified(try pki.crl(by: .intermediate), pki: pki, issuer: pki.root)
        }
        #expect(error?.code == .wrongIssuer)
    }

    @Test func bytesThatAreNotACRLAreMalformed() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let error = #expect(throws: CRLUnavailable.self) { _ = try Self.verified(Data([0x30, 0x03, 0x02, 0x01, 0x01]), pki: pki) }
        #expect(error?.code == .malformed)
    }

    @Test func aCRLWithTrailingBytesIsMalformed() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let error = #expect(throws: CRLUnavailable.self) { _ = try Self.verified(try pki.crl(by: .intermediate) + Data([0]), pki: pki) }
        #expect(error?.code == .malformed)
    }

    @Test func aCRLWhoseThisUpdateIsInTheFutureIsRefused() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let der = try pki.crl(by: .intermediate, thisUpdate: Date(timeIntervalSinceNow: 86_400), nextUpdate: Date(timeIntervalSinceNow: 7 * 86_400))
        let error = #expect(throws: CRLUnavailable.self) { _ = try Self.verified(der, pki: pki) }
        #expect(error?.code == .badDates)
    }

    @Test func theKitNamesTheCRLDistributionPointsItWasGiven() throws {
        let base = try #require(URL(string: "http://127.0.0.1:9/crls"))
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: base)
        let leaf = try #require(CRLSubject.of(pki.leaf.certificate.derRepresentation,
                                              fingerprint: Digest32(SHA256Digest.hash(pki.leaf.certificate.derRepresentation))!))
        let intermediate = try #require(CRLSubject.of(pki.intermediate.derRepresentation,
                                                      fingerprint: Digest32(SHA256Digest.hash(pki.intermediate.derRepresentation))!))
        #expect(leaf.urls == [pki.intermediateCRLURL])
        #expect(intermediate.urls == [pki.rootCRLURL])
        #expect(!leaf.isAuthority && intermediate.isAuthority)
    }

    // MARK: The refresh schedule

    @Test func aHeldCRLIsDueAtItsRefreshTime() {
        let item = CRLRefreshSchedule.Item(url: "a", refreshAt: 1_000, lastAttempt: 100)
        #expect(CRLRefreshSchedule.plan([item], now: 999, retryInterval: 60) == .init(due: [], nextWake: 1_000))
        #expect(CRLRefreshSchedule.plan([item], now: 1_000, retryInterval: 60) == .init(due: ["a"], nextWake: nil))
    }

    @Test func aFailedRefreshIsTriedAgainAfterTheRetryIntervalNotAtOnce() {
        let item = CRLRefreshSchedule.Item(url: "a", refreshAt: 1_000, lastAttempt: 1_010)
        #expect(CRLRefreshSchedule.plan([item], now: 1_020, retryInterval: 60) == .init(due: [], nextWake: 1_070))
        #expect(CRLRefreshSchedule.plan([item], now: 1_070, retryInterval: 60).due == ["a"])
    }

    @Test func theNextWakeIsTheEarliestItem() {
        let items = [CRLRefreshSchedule.Item(url: "a", refreshAt: 5_000, lastAttempt: 0),
                     CRLRefreshSchedule.Item(url: "b", refreshAt: 2_000, lastAttempt: 0)]
        #expect(CRLRefreshSchedule.plan(items, now: 10, retryInterval: 60).nextWake == 2_000)
    }

    @Test func aCRLIsRefreshedAnHourBeforeItsNextUpdateOrAtHalfItsLife() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let week = try Self.verified(try pki.crl(by: .intermediate, thisUpdate: Date(timeIntervalSince1970: TimeInterval(Self.now - 60)),
                                                 nextUpdate: Date(timeIntervalSince1970: TimeInterval(Self.now + 7 * 86_400))), pki: pki)
        #expect(CRLChecker.refreshAt(week) == week.nextUpdate - 3_600)
        let short = try Self.verified(try pki.crl(by: .intermediate, thisUpdate: Date(timeIntervalSince1970: TimeInterval(Self.now - 60)),
                                                  nextUpdate: Date(timeIntervalSince1970: TimeInterval(Self.now + 1_140))), pki: pki)
        #expect(CRLChecker.refreshAt(short) == short.nextUpdate - 600)
    }

    // MARK: The signed list's section

    static func section(_ json: String) throws(PinStoreError) -> CRLHostList? {
        let body = Data(#"{"fingerprints": [], "crl": \#(json)}"#.utf8)
        return try FingerprintListDocument(body: body).crl.map(CRLHostList.init)
    }

    @Test func theMostSpecificHostEntryGivesTheMode() throws {
        let list = try #require(try Self.section(#"{"hosts": [{"name": "*.example.com", "mode": "reportOnly"}, {"name": "pay.example.com", "mode": "enforceHardFail"}]}"#))
        #expect(list.mode(for: "pay.example.com") == .enforceHardFail)
        #expect(list.mode(for: "www.example.com") == .reportOnly)
        #expect(list.mode(for: "example.org") == nil)
    }

    @Test func anUnknownModeRefusesTheList() {
        let error = #expect(throws: PinStoreError.self) { _ = try Self.section(#"{"hosts": [{"name": "a.example", "mode": "strict"}]}"#) }
        #expect(error?.code == .invalidListData)
    }

    @Test func theRetiredSpellingEnforceIsRefusedWithBothModesItCouldMean() {
        // "enforce" let the connection through when the CRL could not be had; the list must
        // now say which of the two it wants.
        let error = #expect(throws: PinStoreError.self) { _ = try Self.section(#"{"hosts": [{"name": "a.example", "mode": "enforce"}]}"#) }
        #expect(error?.code == .invalidListData)
        #expect(error?.reason.contains(#""enforce" was renamed: "enforceSoftFail""#) == true, "\(String(describing: error))")
        #expect(error?.reason.contains(#""enforceHardFail" refuses it"#) == true, "\(String(describing: error))")
    }

    @Test func anUnknownMemberOfAHostEntryRefusesTheList() {
        let error = #expect(throws: PinStoreError.self) {
            _ = try Self.section(#"{"hosts": [{"name": "a.example", "mode": "enforceSoftFail", "subdomains": true}]}"#)
        }
        #expect(error?.code == .invalidListData)
    }

    @Test func anUnknownMemberOfTheSectionRefusesTheList() {
        // A default mode written beside the hosts would otherwise be read by nobody.
        let error = #expect(throws: PinStoreError.self) {
            _ = try Self.section(#"{"hosts": [{"name": "a.example", "mode": "reportOnly"}], "mode": "enforceHardFail"}"#)
        }
        #expect(error?.code == .invalidListData)
    }

    @Test func theSignersCheckRefusesAnUnknownMemberOfTheSection() {
        let error = #expect(throws: PinStoreError.self) {
            _ = try CRLHostList.checkedSection(Data(#"{"hosts": [], "defaultMode": "enforceSoftFail"}"#.utf8))
        }
        #expect(error?.reason.contains("defaultMode") == true, "\(String(describing: error))")
    }

    // MARK: The leaf view and the configuration

    static func store(mode: CRLCheckMode, pki: TestPKI) throws -> PinStore {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://127.0.0.1:1/list.json")!, publicKey: try TestListSigningKey().publicKeyBase64,
                                                   storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-\(UUID().uuidString)"))
        configuration.crlMode = mode
        configuration.policies = [PinPolicy(domain: "localhost", pins: [.certificate(sha256Base64: pki.leaf.certificate.fingerprintBase64), .certificate(sha256Base64: pki.impostor.certificate.fingerprintBase64)])]
        return try PinStore(configuration: configuration)
    }

    @Test func theLeafViewRefusesAHostUnderSoftFailWithATypedReason() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let store = try Self.store(mode: .enforceSoftFail, pki: pki)
        let decision = store.leafDecision(try LeafView(leaf: pki.leaf.certificate.derRepresentation, peerAddress: "::1"))
        #expect(decision.failure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }

    @Test func theLeafViewReportsAHostUnderReportOnly() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let store = try Self.store(mode: .reportOnly, pki: pki)
        let decision = store.leafDecision(try LeafView(leaf: pki.leaf.certificate.derRepresentation, peerAddress: "::1"))
        #expect(decision.isAllowed)
        #expect(decision.reportedFailure?.reason.crlCheckFailure?.unavailable?.code == .needsValidatedChain)
    }

    @Test func theLeafViewDoesNotLookAtCRLsWhenTheModeIsOff() throws {
        let pki = try TestPKI(hosts: ["localhost"])
        let store = try Self.store(mode: .off, pki: pki)
        let decision = store.leafDecision(try LeafView(leaf: pki.leaf.certificate.derRepresentation, peerAddress: "::1"))
        #expect(decision.isAllowed && decision.reportedFailure == nil)
    }

    @Test func aFetchBudgetOutsideATenthToThirtySecondsIsAConfigurationError() throws {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://127.0.0.1:1/list.json")!, publicKey: try TestListSigningKey().publicKeyBase64)
        configuration.crlFetchBudget = 0
        let error = #expect(throws: PinStoreError.self) { _ = try PinStore(configuration: configuration) }
        #expect(error?.code == .invalidConfiguration)
    }
}

/// The committed CRL fuzz seeds (`Fuzz/make-corpus.sh`, `openssl ca -gencrl` with the fixture
/// intermediate) reach the scope and entries, and a delta CRL is refused as unsupported.
@Suite struct CRLFuzzSeedTests {
    static func seed(_ name: String) throws -> Data {
        try Data(contentsOf: TestResources.packageRoot.appendingPathComponent("Fuzz/corpus/crl/\(name)"))
    }

    @Test func theRevokedSeedIsReadWithItsEntry() throws {
        guard case .success(let (coverage, entries))? = CertificateRevocationList.readUnverified(try Self.seed("revoked.der")) else {
            Issue.record("the seed was not read")
            return
        }
        #expect(coverage == .allCertificates)
        #expect(entries == 1)
    }

    @Test func aDeltaCRLIsRefusedAsUnsupported() throws {
        guard case .failure(let why)? = CertificateRevocationList.readUnverified(try Self.seed("delta.der")) else {
            Issue.record("a delta CRL was read as a complete one")
            return
        }
        #expect(why.code == .deltaCRLUnsupported)
    }

    @Test func theSeedsVerifyAgainstTheFixtureIntermediate() throws {
        let issuer = try Data(contentsOf: TestResources.packageRoot.appendingPathComponent("Fixtures/pki/intermediate-ca.der"))
        let key = try #require(ValidatedChain.publicKeyDigest(of: issuer, fingerprint: Digest32(SHA256Digest.hash(issuer))!))
        let der = try Self.seed("empty.der")
        // Judged at the seed's own thisUpdate, so the seed never expires for this test.
        let crl = try CertificateRevocationList(der: der, url: "http://127.0.0.1/intermediate.crl", issuer: issuer, issuerKey: key,
                                                now: try #require(Self.thisUpdate(der)))
        #expect(crl.revoked.isEmpty)
    }

    /// `thisUpdate` of a CRL, read the way the check reads it.
    static func thisUpdate(_ der: Data) -> Int64? {
        guard case .success? = CertificateRevocationList.readUnverified(der) else { return nil }
        return CertificateRevocationList.thisUpdateForTests(der)
    }
}

/// ``PinStore/run()`` fetches a cached CRL again before its `nextUpdate`, on the injected clock
/// (no sleep): the CRL server counts the second download.
@Suite struct CRLRefreshThroughRunTests {
    @Test(.timeLimit(.minutes(10)))
    func runFetchesACachedCRLAgainBeforeItsNextUpdate() async throws {
        let clock = ManualClock.inValidPeriod()
        let crls = try await TestCRLServer.start()
        defer { Task { try? await crls.shutdown() } }
        let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: crls.baseURL)
        let start = clock.now()
        // Current for two hours of the manual clock: due for a refresh an hour before that.
        crls.serve(.crl(try pki.crl(by: .intermediate, thisUpdate: start.addingTimeInterval(-60), nextUpdate: start.addingTimeInterval(7_200))),
                   at: "intermediate.crl")
        var configuration = PinStore.Configuration(serviceURL: URL(string: "http://127.0.0.1:1/list.json")!, publicKey: try TestListSigningKey().publicKeyBase64,
                                                   storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-crl-run-\(UUID().uuidString)"))
        configuration.crlMode = .enforceSoftFail
        let store = try PinStore(configuration: configuration, fetcher: URLSessionListFetcher(), clock: clock)
        let issuer = pki.intermediate
        await store.crl.load(url: try #require(pki.intermediateCRLURL), issuer: issuer.derRepresentation,
                             issuerKey: Digest32(SHA256Digest.hash(issuer.subjectPublicKeyInfo))!)
        #expect(crls.requestCount(for: "intermediate.crl") == 1)
        let service = Task { try await store.run() }
        defer { service.cancel() }
        // Past the refresh time: run() wakes (at most a minute of the manual clock at a time) and
        // fetches. The manual clock stops 90 minutes on, inside the CRL's validity, and the test
        // waits for the fetch however long a loaded machine takes to run it (``HangGuard``).
        _ = try await pollUntil(every: .milliseconds(20)) {
            if crls.requestCount(for: "intermediate.crl") >= 2 { return true }
            if clock.now() < start.addingTimeInterval(5_400) { clock.advance(60) }
            return false
        }
        #expect(crls.requestCount(for: "intermediate.crl") == 2)
    }
}
