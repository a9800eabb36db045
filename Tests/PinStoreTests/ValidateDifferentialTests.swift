import Foundation
import PinStoreTesting
import Testing
@testable import PinStore

/// Every `matchPins` form against the adapters' decision (``PinningEvaluator``, which
/// `PinningTLSVerifier` and the pinned URLSession run) on the same chain, for every rule:
/// Certificate Transparency enforced, a deny pin, CA pins, expected hosts, and the pins alone.
/// A form may be stricter (a lone fingerprint cannot show a key or an issuer), never more
/// permissive; the chain form checks exactly what the adapters check after trust evaluation.
///
/// The chains are issued by a test CA the evaluator trusts, so the trust evaluation accepts
/// each and only the rules decide.
@Suite struct ValidateDifferentialTests {
    /// A CA, two CT logs of two operators, and leaves for `localhost` with and without SCTs.
    struct World: Sendable {
        let pki: TestPKI
        let logs: [TestCTLog]
        /// Two SCTs from two operators: complies with the default (Chrome) profile.
        let compliant: TestIdentity
        /// No SCT at all.
        let bare: TestIdentity
        /// Another leaf of the same CA, pinned by nobody.
        let other: TestIdentity
        let key: TestListSigningKey

        private static let shared = Result { () throws -> World in try World() }
        static func get() throws -> World { try shared.get() }

        private init() throws {
            pki = try TestPKI(hosts: ["localhost"])
            logs = [try TestCTLog(keyType: .p256), try TestCTLog(keyType: .p256)]
            compliant = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logs[0]), TestSCT(log: logs[1])])
            bare = try pki.issueLeaf(for: ["localhost"])
            other = try pki.issueLeaf(for: ["localhost"])
            key = try TestListSigningKey()
        }

        var leaves: [(name: String, identity: TestIdentity)] { [("compliant", compliant), ("bare", bare), ("other", other)] }

        /// A list entry for `localhost` pinning `certificate` (`kind`, `depth`).
        func entry(_ certificate: X509Certificate, kind: FingerprintEntry.Kind = .certificate, depth: Int = 0) -> FingerprintEntry {
            let digest = kind == .certificate ? certificate.fingerprint : SHA256Digest.hash(certificate.subjectPublicKeyInfo)
            return FingerprintEntry(name: "localhost", fingerprint: digest, expires: Int64(pki.validity.end.timeIntervalSince1970), depth: depth, kind: kind)
        }

        /// The CT section naming both logs, with `localhost` in `mode`.
        func certificateTransparency(_ mode: CertificateTransparencyMode) -> TestCTLogList {
            TestCTLogList(logs: [.init(logs[0], operatorName: "Operator A"), .init(logs[1], operatorName: "Operator B")],
                          hosts: ["localhost": mode], timestamp: Date(timeIntervalSinceNow: -86_400))
        }
    }

    /// One configuration of the table, and what the adapters must decide for each leaf (so a
    /// fixture that stops exercising its rule fails here, not silently).
    struct Case: Sendable, CustomStringConvertible {
        let description: String
        var entries: @Sendable (World) -> [FingerprintEntry]
        var ctMode: CertificateTransparencyMode? = nil
        var configure: @Sendable (inout PinStore.Configuration, World) -> Void = { _, _ in }
        /// The leaves (`World.leaves` names) the adapters allow for `localhost`.
        let adaptersAllow: Set<String>
    }

    /// A policy's backup pin: a key no certificate here has.
    static let backup = PinIdentity.leafKey(spkiSHA256Base64: PinPolicyTests.backup)

    static let cases: [Case] = [
        Case(description: "leaf certificate pins", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] },
             adaptersAllow: ["compliant", "bare"]),
        Case(description: "leaf key pins", entries: { w in [w.entry(w.compliant.certificate, kind: .publicKey), w.entry(w.bare.certificate, kind: .publicKey)] },
             adaptersAllow: ["compliant", "bare"]),
        Case(description: "CT enforced", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] }, ctMode: .enforce,
             adaptersAllow: ["compliant"]),
        Case(description: "CT enforced, a policy for an unrelated host",
             entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] }, ctMode: .enforce,
             configure: { configuration, w in
                 configuration.policies = [PinPolicy(domain: "unrelated.example", pins: [.leafKey(spkiSHA256Base64: w.other.certificate.spkiSHA256Base64), Self.backup])]
             },
             adaptersAllow: ["compliant"]),
        Case(description: "CT report-only", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] }, ctMode: .reportOnly,
             adaptersAllow: ["compliant", "bare"]),
        Case(description: "a deny pin on the intermediate", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] },
             configure: { configuration, w in configuration.deniedPublicKeys = [w.pki.intermediate.spkiSHA256Base64] },
             adaptersAllow: []),
        Case(description: "a deny pin on another key", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] },
             configure: { configuration, w in configuration.deniedPublicKeys = [w.other.certificate.spkiSHA256Base64] },
             adaptersAllow: ["compliant", "bare"]),
        Case(description: "a CA certificate pin at depth 1", entries: { w in [w.entry(w.pki.intermediate, depth: 1)] },
             adaptersAllow: ["compliant", "bare", "other"]),
        Case(description: "a CA key pin", entries: { w in [w.entry(w.pki.intermediate, kind: .caPublicKey)] },
             adaptersAllow: ["compliant", "bare", "other"]),
        Case(description: "a policy's CA key pin", entries: { _ in [] },
             configure: { configuration, w in
                 configuration.policies = [PinPolicy(domain: "localhost", pins: [.caKey(spkiSHA256Base64: w.pki.intermediate.spkiSHA256Base64), Self.backup])]
             },
             adaptersAllow: ["compliant", "bare", "other"]),
        Case(description: "a policy's leaf key pin", entries: { _ in [] },
             configure: { configuration, w in
                 configuration.policies = [PinPolicy(domain: "localhost", pins: [.leafKey(spkiSHA256Base64: w.bare.certificate.spkiSHA256Base64), Self.backup])]
             },
             adaptersAllow: ["bare"]),
        Case(description: "expected hosts without localhost", entries: { w in [w.entry(w.compliant.certificate), w.entry(w.bare.certificate)] },
             configure: { configuration, _ in configuration.expectedCommonNames = ["api.pinstore.test"] },
             adaptersAllow: []),
        Case(description: "expected hosts with localhost", entries: { w in [w.entry(w.bare.certificate)] },
             configure: { configuration, _ in configuration.expectedCommonNames = ["localhost", "api.pinstore.test"] },
             adaptersAllow: ["bare"]),
    ]

    /// A store holding `testCase`'s list, signed with the world's key and put in force through
    /// a real update.
    static func store(_ testCase: Case, _ world: World) async throws -> PinStore {
        var list = TestPinList(entries: testCase.entries(world))
        if let mode = testCase.ctMode { list.certificateTransparency = world.certificateTransparency(mode) }
        let body = try world.key.signedStaticList(list)
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.pinstore.test/list.json")!,
                                                   publicKey: world.key.publicKeyBase64,
                                                   storageDirectory: FileManager.default.temporaryDirectory
                                                       .appendingPathComponent("pinstore-validate-differential-\(UUID().uuidString)"))
        configuration.requireListSignature = true
        // The test CA is the evaluator's only anchor: without this it would be exempt from CT.
        configuration.certificateTransparencyForPrivateAnchors = true
        testCase.configure(&configuration, world)
        let store = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(body))
        let updated = await store.update(mode: .forced)
        // A list with no entries ("policy" cases) is stored as empty.
        try #require(updated == .ok || updated == .storeIsEmpty, "\(testCase): the list was not put in force (\(updated))")
        return store
    }

    @Test(arguments: cases)
    func noValidateFormAnswersTrustedWhereTheAdaptersRefuse(_ testCase: Case) async throws {
        let world = try World.get()
        let store = try await Self.store(testCase, world)
        let evaluator = PinningEvaluator(store: store, trustRoots: world.pki.trustRoots, updateOnEmpty: false, updateOnMismatch: false)
        for (name, identity) in world.leaves {
            let decision = evaluator.evaluateNow(host: "localhost", presentedChain: identity.chainDER)
            #expect(decision.isAllowed == testCase.adaptersAllow.contains(name), "\(testCase), \(name): the adapters decided \(decision)")
            let leaf = identity.certificate
            let answers: [(form: String, answer: PinStore.ValidationResult)] = [
                ("certificateChain", store.matchPins(commonName: "localhost", certificateChain: identity.chainDER)),
                ("certificateData", store.matchPins(commonName: "localhost", certificateData: leaf.derRepresentation)),
                ("fingerprint", store.matchPins(commonName: "localhost", fingerprint: leaf.fingerprint)),
                ("publicKeySHA256", store.matchPins(commonName: "localhost", publicKeySHA256: SHA256Digest.hash(leaf.subjectPublicKeyInfo))),
            ]
            for (form, answer) in answers where answer == .trusted {
                #expect(decision.isAllowed, "\(testCase), \(name): validate(\(form):) is .trusted, the adapters decided \(decision)")
            }
            // The chain form runs the adapters' rules: it agrees, not only never allows more.
            #expect((answers[0].answer == .trusted) == decision.isAllowed,
                    "\(testCase), \(name): validate(certificateChain:) is \(answers[0].answer), the adapters decided \(decision)")
        }
    }

    @Test func aLoneCertificateIsRefusedForAHostUnderCTEnforcementEvenWithItsSCTs() async throws {
        let world = try World.get()
        let store = try await Self.store(Self.cases[2], world)
        let leaf = world.compliant.certificate
        // The SCTs are signed over the issuer's key, which a lone certificate does not show.
        #expect(store.matchPins(commonName: "localhost", certificateData: leaf.derRepresentation) == .untrusted)
        #expect(store.matchPins(commonName: "localhost", fingerprint: leaf.fingerprint) == .untrusted)
        #expect(store.matchPins(commonName: "localhost", certificateChain: world.compliant.chainDER) == .trusted)
    }

    @Test func aLoneCertificateIsRefusedForAHostPinnedOnlyAboveTheLeaf() async throws {
        let world = try World.get()
        let store = try await Self.store(Self.cases[7], world)
        let leaf = world.bare.certificate
        #expect(store.matchPins(commonName: "localhost", certificateData: leaf.derRepresentation) == .untrusted)
        #expect(store.matchPins(commonName: "localhost", fingerprint: leaf.fingerprint) == .untrusted)
        #expect(store.matchPins(commonName: "localhost", publicKeySHA256: SHA256Digest.hash(leaf.subjectPublicKeyInfo)) == .untrusted)
    }

    @Test func aPolicyForAnUnrelatedHostDoesNotChangeTheAnswer() async throws {
        let world = try World.get()
        let without = try await Self.store(Self.cases[2], world)
        let with = try await Self.store(Self.cases[3], world)
        for (_, identity) in world.leaves {
            #expect(without.matchPins(commonName: "localhost", certificateChain: identity.chainDER)
                    == with.matchPins(commonName: "localhost", certificateChain: identity.chainDER))
        }
    }
}
