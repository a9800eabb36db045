import Foundation
import PinStoreSigning
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The signed list's `revocations` section: how it is read, when it counts, and
/// ``RevocationRule``'s place in ``PinningRules``. The fixture chain is `localhost` under the
/// test intermediate CA (Fixtures/pki, made by the committed script).
@Suite struct ListRevocationTests {
    static func certificate(_ name: String) throws -> X509Certificate {
        try TestResources.certificate("pki/\(name).pem")
    }

    static func keyDigest(_ name: String) throws -> Data {
        SHA256Digest.hash(try certificate(name).subjectPublicKeyInfo)
    }

    static func section(_ entries: [ListRevocations.Wire]) throws -> ListRevocations {
        try ListRevocations(entries)
    }

    /// The section as a list body would carry it, parsed as a list body is.
    static func parse(_ json: String) throws(PinStoreError) -> ListRevocations? {
        let document = try FingerprintListDocument(body: Data("{\"fingerprints\": [], \"revocations\": \(json)}".utf8))
        return try document.revocations.map(ListRevocations.init)
    }

    static func context(_ evidence: ChainEvidence, revocations: ListRevocations?, pins: [FingerprintEntry] = [],
                        domainsConfig: DomainsConfig? = nil) throws -> PinningContext {
        let context = try PinningRulesTests.context(evidence, pins: pins, domainsConfig: domainsConfig)
        return PinningContext(host: context.host, requestedName: context.requestedName, evidence: context.evidence, list: context.list,
                              fallback: context.fallback, domainsConfig: context.domainsConfig, now: context.now, revocations: revocations)
    }

    static var chain: ChainEvidence { get throws { .validated(try PinningRulesTests.chain("localhost")) } }

    /// What the leaf view knows of `name`: its DER, both digests and its serial number.
    static func leafView(_ name: String) throws -> ChainEvidence {
        guard case .leafOnly(var leaf) = try PinningRulesTests.leafOnly(name) else { throw PinStoreError(.noCertificate, "not a leaf") }
        leaf.serial = try certificate(name).serialNumber
        return .leafOnly(leaf)
    }

    // MARK: - Reading the section

    @Test func aSectionWithEveryKindIsRead() throws {
        let leaf = try Self.certificate("localhost")
        let section = try #require(try Self.parse("""
            [{"kind": "key", "sha256": "\(try Self.keyDigest("intermediate-ca").base64EncodedString())", "note": "stolen"},
             {"kind": "certificate", "sha256": "\(leaf.fingerprintBase64)", "leaf": true},
             {"kind": "issuerSerial", "issuerKeySHA256": "\(try Self.keyDigest("intermediate-ca").base64EncodedString())", "serial": "39263e9ba649114e61cd385eebeae713aa53b4"}]
            """))
        #expect(section.keys.count == 1)
        #expect(section.keys.values.first?.note == "stolen")
        #expect(section.certificates.values.first?.leaf == true)
        #expect(section.serials == [leaf.serialNumber])
        #expect(section.hasEntriesAboveLeaf)
    }

    @Test func aDigestThatIsNotThirtyTwoBytesRefusesTheSection() throws {
        let error = #expect(throws: PinStoreError.self) { try Self.parse(#"[{"kind": "key", "sha256": "AAAA"}]"#) }
        #expect(error?.code == .invalidListData)
        #expect(error?.reason.contains("entry 1") == true)
    }

    @Test func aKeyRevokedTwiceRefusesTheSection() throws {
        let digest = try Self.keyDigest("intermediate-ca").base64EncodedString()
        let error = #expect(throws: PinStoreError.self) {
            try Self.parse(#"[{"kind": "key", "sha256": "\#(digest)"}, {"kind": "key", "sha256": "\#(digest)", "leaf": true}]"#)
        }
        #expect(error?.reason.contains("revoked twice") == true)
    }

    @Test func aSerialWrittenTwoWaysIsStillADuplicate() throws {
        let issuer = try Self.keyDigest("intermediate-ca").base64EncodedString()
        let error = #expect(throws: PinStoreError.self) {
            try Self.parse(#"[{"kind": "issuerSerial", "issuerKeySHA256": "\#(issuer)", "serial": "0A:1B"}, {"kind": "issuerSerial", "issuerKeySHA256": "\#(issuer)", "serial": "a1b"}]"#)
        }
        #expect(error?.reason.contains("revoked twice") == true)
    }

    @Test func anUnknownKindRefusesTheSection() throws {
        let error = #expect(throws: PinStoreError.self) { try Self.parse(#"[{"kind": "crlSet", "sha256": "x"}]"#) }
        #expect(error?.reason.contains("kind \"crlSet\"") == true)
    }

    @Test func anUnknownMemberRefusesTheSection() throws {
        let digest = try Self.keyDigest("intermediate-ca").base64EncodedString()
        let error = #expect(throws: PinStoreError.self) { try Self.parse(#"[{"kind": "key", "sha256": "\#(digest)", "hosts": ["a.example"]}]"#) }
        #expect(error?.code == .invalidListData)
        #expect(error?.reason.contains("hosts") == true)
    }

    @Test func aSerialThatIsNotHexRefusesTheSection() throws {
        let issuer = try Self.keyDigest("intermediate-ca").base64EncodedString()
        let error = #expect(throws: PinStoreError.self) {
            try Self.parse(#"[{"kind": "issuerSerial", "issuerKeySHA256": "\#(issuer)", "serial": "12G4"}]"#)
        }
        #expect(error?.reason.contains("not a hexadecimal serial") == true)
    }

    @Test func moreEntriesThanTheCapRefuseTheSection() throws {
        let entries = (0...ListRevocations.maximumEntries).map { index in
            var bytes = Data(count: 32)
            withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(0..<4, with: $0) }
            return ListRevocations.Wire.key(spkiSHA256: bytes)
        }
        let error = #expect(throws: PinStoreError.self) { try Self.section(entries) }
        #expect(error?.reason.contains("at most \(ListRevocations.maximumEntries)") == true)
    }

    @Test func theSerialOpenSSLReadsIsTheOneOpenSSLPrints() throws {
        // `openssl x509 -in Fixtures/pki/localhost.pem -noout -serial`
        #expect(try Self.certificate("localhost").serialNumber.description == "39263E9BA649114E61CD385EEBEAE713AA53B4")
        // `openssl x509 -in Fixtures/pki/intermediate-ca.pem -noout -serial`: a leading zero digit, one octet.
        #expect(try Self.certificate("intermediate-ca").serialNumber == (try CertificateSerial(hex: "9ED0429FBFF9659E3DD162C8E5EB10DF6E5D9A7")))
    }

    // MARK: - Where a signature covers it

    static func verifier(_ key: P256PrivateKey, mode: PersistedList.Mode = .static) throws -> ListVerifier {
        ListVerifier(keys: try ListKeySet(version: 1, keys: [try key.publicKey], threshold: 1, expires: nil),
                     requireListSignature: false, mode: mode)
    }

    static var pin: FingerprintEntry {
        get throws { try PinningRulesTests.entry("localhost") }
    }

    @Test func aWholeListSignatureCarriesTheSection() throws {
        let key = try P256PrivateKey()
        let body = try FingerprintListSigner(privateKey: key).staticList([try Self.pin], timestamp: 1_800_000_000, version: nil, expires: nil,
                                                                         certificateTransparency: nil,
                                                                         revocations: [.certificate(try Self.certificate("localhost"))])
        let verified = try Self.verifier(key).verify(PersistedList(mode: .static, body: body, nextUpdate: 0))
        #expect(verified.revocations?.certificates.count == 1)
    }

    @Test func aStaticListWithoutAWholeListSignatureIsRefusedForCarryingTheSection() throws {
        let key = try P256PrivateKey()
        // Per-entry signatures only: whoever answers the request could have added the member.
        let text = String(decoding: try FingerprintListSigner(privateKey: key).staticList([try Self.pin]), as: UTF8.self)
            .replacingOccurrences(of: "{\n", with: "{\n  \"revocations\": [{\"kind\": \"key\", \"sha256\": \"\(try Self.keyDigest("intermediate-ca").base64EncodedString())\"}],\n")
        let error = #expect(throws: PinStoreError.self) {
            try Self.verifier(key).verify(PersistedList(mode: .static, body: Data(text.utf8), nextUpdate: 0))
        }
        #expect(error?.code == .invalidListSignature)
        #expect(error?.reason.contains("revocations section but no whole-list signature") == true)
    }

    @Test func aChallengeResponseSignatureCarriesTheSection() throws {
        let key = try P256PrivateKey()
        let body = try FingerprintListSigner.challengeModeBody([try Self.pin], timestamp: 1_800_000_000, version: nil, expires: nil,
                                                               certificateTransparency: nil,
                                                               revocations: [.key(of: try Self.certificate("intermediate-ca"))])
        let signature = try FingerprintListSigner(privateKey: key).challengeResponseSignature(challenge: "c2Vlbg==", body: body)
        let verified = try Self.verifier(key, mode: .challenge)
            .verify(PersistedList(mode: .challenge, body: body, challenge: "c2Vlbg==", signature: signature, nextUpdate: 0))
        #expect(verified.revocations?.keys.count == 1)
    }

    @Test func aSignerRefusesRevocationsWithoutAWholeListSignature() throws {
        let error = #expect(throws: PinStoreError.self) {
            try FingerprintListSigner(privateKey: try P256PrivateKey()).staticList([try Self.pin], timestamp: nil, version: nil, expires: nil,
                                                                                   certificateTransparency: nil,
                                                                                   revocations: [.certificate(try Self.certificate("localhost"))])
        }
        #expect(error?.reason.contains("revocations") == true)
    }

    // MARK: - The rule over a validated chain

    @Test func aRevokedIntermediateKeyRefusesTheChainAtItsDepth() throws {
        let section = try Self.section([.key(of: try Self.certificate("intermediate-ca"))])
        let result = RevocationRule().check(try Self.context(try Self.chain, revocations: section))
        #expect(result == .failsRule(.revokedByList(ListRevocationMatch(kind: .key, depth: 1, note: nil)), enforcing: true, relaxable: false))
    }

    @Test func aRevokedLeafCertificateRefusesTheChainAtTheLeaf() throws {
        let section = try Self.section([.certificate(try Self.certificate("localhost"))])
        let result = RevocationRule().check(try Self.context(try Self.chain, revocations: section))
        #expect(result == .failsRule(.revokedByList(ListRevocationMatch(kind: .certificate, depth: 0, note: nil)), enforcing: true, relaxable: false))
    }

    @Test func aRevokedSerialUnderTheLeafsIssuerRefusesTheLeaf() throws {
        let leaf = try Self.certificate("localhost")
        let section = try Self.section([.issuerSerial(of: leaf, issuerKeySHA256: try Self.keyDigest("intermediate-ca"))])
        let result = RevocationRule().check(try Self.context(try Self.chain, revocations: section))
        #expect(result == .failsRule(.revokedByList(ListRevocationMatch(kind: .issuerSerial, depth: 0, note: nil)), enforcing: true, relaxable: false))
    }

    @Test func theSameSerialUnderAnotherIssuerKeyIsNotRevoked() throws {
        let section = try Self.section([.issuerSerial(of: try Self.certificate("localhost"), issuerKeySHA256: try Self.keyDigest("rogue-root-ca"))])
        #expect(RevocationRule().check(try Self.context(try Self.chain, revocations: section)) == .meetsRule)
    }

    @Test func aChainNoEntryNamesMeetsTheRule() throws {
        let section = try Self.section([.key(of: try Self.certificate("rogue-root-ca")), .certificate(try Self.certificate("attacker"))])
        #expect(RevocationRule().check(try Self.context(try Self.chain, revocations: section)) == .meetsRule)
    }

    // MARK: - Its place in the rules

    @Test func aRevokedChainIsRefusedEvenWhenPinned() throws {
        let rules = PinningRules(enforcement: .enforced, expectedNames: nil, staticPins: .none)
        let section = try Self.section([.key(of: try Self.certificate("intermediate-ca"))])
        let decision = rules.decide(try Self.context(try Self.chain, revocations: section, pins: [try Self.pin]))
        #expect(decision.failure?.reason.listRevocation == ListRevocationMatch(kind: .key, depth: 1, note: nil))
    }

    @Test func reportOnlyDoesNotRelaxARevocation() throws {
        let rules = PinningRules(enforcement: .reportOnly, expectedNames: nil, staticPins: .none)
        let section = try Self.section([.certificate(try Self.certificate("localhost"))])
        let decision = rules.decide(try Self.context(try Self.chain, revocations: section))
        guard case .deny(let failure) = decision else {
            Issue.record("a revoked chain was let through in report-only mode: \(decision)")
            return
        }
        #expect(failure.reason.code == .revokedByList)
        #expect(PinStoreMetrics.dimensions(of: decision) == ("denied", "revoked_by_list"))
    }

    @Test func aDomainsConfigExemptionDoesNotRelaxARevocation() throws {
        let rules = PinningRules(enforcement: .enforced, expectedNames: nil, staticPins: .none)
        let config = try #require(try DomainsConfig(challengeBody: Data(#"{"fingerprints": [], "domainsConfig": {"sslPinningRequiredForUnlisted": false}}"#.utf8)))
        let section = try Self.section([.certificate(try Self.certificate("localhost"))])
        #expect(rules.decide(try Self.context(try Self.chain, revocations: nil, domainsConfig: config)).isAllowed)
        #expect(rules.decide(try Self.context(try Self.chain, revocations: section, domainsConfig: config)).failure?.reason.code == .revokedByList)
    }

    @Test func aRevokedChainIsRefusedBeforeAnUnexpectedHostIsNamed() throws {
        let rules = PinningRules(enforcement: .enforced, expectedNames: ["api.pinstore.test"], staticPins: .none)
        let section = try Self.section([.certificate(try Self.certificate("localhost"))])
        #expect(rules.decide(try Self.context(try Self.chain, revocations: section)).failure?.reason.code == .revokedByList)
    }

    @Test func noUpdateIsFetchedToArgueWithARevocation() {
        let decision = PinningDecision.deny(PinningFailure(host: "h", reason: .revokedByList(ListRevocationMatch(kind: .key, depth: 1, note: nil))))
        #expect(!PinStore.wantsUpdate(after: decision, updateOnEmpty: true, updateOnMismatch: true))
    }

    // MARK: - A leaf alone

    @Test func aLeafAloneWhoseCertificateIsRevokedIsRefusedAsRevoked() throws {
        let section = try Self.section([.certificate(try Self.certificate("localhost"))])
        let result = RevocationRule().check(try Self.context(try Self.leafView("localhost"), revocations: section))
        #expect(result == .failsRule(.revokedByList(ListRevocationMatch(kind: .certificate, depth: 0, note: nil)), enforcing: true, relaxable: false))
    }

    @Test func aLeafAloneIsRefusedWhenTheListRevokesACAKeyItCannotRuleOut() throws {
        let section = try Self.section([.key(of: try Self.certificate("rogue-root-ca"))])
        let result = RevocationRule().check(try Self.context(try Self.leafView("localhost"), revocations: section))
        #expect(result == .failsRule(.revocationsNeedChain, enforcing: true, relaxable: false))
    }

    @Test func aLeafAloneMeetsTheRuleWhenEveryEntryNamesAnotherLeaf() throws {
        let other = try Self.certificate("attacker")
        let section = try Self.section([.certificate(other), .key(of: other),
                                        .issuerSerial(of: other, issuerKeySHA256: try Self.keyDigest("rogue-root-ca"))])
        #expect(!section.hasEntriesAboveLeaf)
        #expect(RevocationRule().check(try Self.context(try Self.leafView("localhost"), revocations: section)) == .meetsRule)
    }

    @Test func aLeafAloneWithARevokedSerialOfAnUnseenIssuerIsRefused() throws {
        let section = try Self.section([.issuerSerial(of: try Self.certificate("localhost"), issuerKeySHA256: try Self.keyDigest("rogue-root-ca"))])
        #expect(RevocationRule().check(try Self.context(try Self.leafView("localhost"), revocations: section)) == .failsRule(.revocationsNeedChain, enforcing: true, relaxable: false))
    }

    @Test func aLoneFingerprintCannotRuleOutARevokedKey() throws {
        // matchPins(commonName:fingerprint:) knows the certificate digest only.
        let fingerprint = try #require(Digest32(try Self.certificate("localhost").fingerprint))
        let section = try Self.section([.key(of: try Self.certificate("attacker"))])
        let result = RevocationRule().check(try Self.context(.leafOnly(.init(fingerprint: fingerprint)), revocations: section))
        #expect(result == .failsRule(.revocationsNeedChain, enforcing: true, relaxable: false))
    }
}
