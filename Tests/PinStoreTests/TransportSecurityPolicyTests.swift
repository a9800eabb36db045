import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// ATS's certificate minimums as a policy over a validated chain, and the per-domain exceptions,
/// without sockets.
@Suite struct CertificateStrengthPolicyTests {
    func verdict(_ paths: String...) throws -> CertificateStrengthPolicy.Verdict {
        CertificateStrengthPolicy().check(validatedChain: try paths.flatMap { try TestResources.chainDER($0) })
    }

    func violation(_ verdict: CertificateStrengthPolicy.Verdict) -> TransportSecurityViolation? {
        if case .failsToMeetPolicy(let violation) = verdict { return violation }
        return nil
    }

    @Test func p256ChainSignedWithSHA256MeetsThePolicy() throws {
        #expect(try verdict("pki/localhost-chain.pem", "pki/root-ca.pem") == .meetsPolicy)
    }

    @Test func rsa2048LeafMeetsThePolicy() throws {
        #expect(try verdict("pki/localhost-rsa-chain.pem", "pki/root-ca.pem") == .meetsPolicy)
    }

    @Test func sha1SignedLeafFailsTheSignatureDigestRequirementAtDepthZero() throws {
        let failure = violation(try verdict("pki/localhost-sha1-chain.pem", "pki/root-ca.pem"))
        #expect(failure?.requirement == .certificateSignatureDigest)
        #expect(failure?.depth == 0)
        #expect(failure?.detail.contains("SHA1") == true)
    }

    @Test func rsa1024LeafFailsTheKeySizeRequirement() throws {
        let failure = violation(try verdict("pki/localhost-rsa1024-chain.pem", "pki/root-ca.pem"))
        #expect(failure?.requirement == .certificateKeySize)
        #expect(failure?.depth == 0)
        #expect(failure?.detail.contains("1024") == true)
    }

    @Test func p224LeafFailsTheKeySizeRequirement() throws {
        let failure = violation(try verdict("pki/localhost-p224-chain.pem", "pki/root-ca.pem"))
        #expect(failure?.requirement == .certificateKeySize)
        #expect(failure?.detail.contains("224") == true)
    }

    @Test func anchorsOwnSHA1SelfSignatureIsNotJudged() throws {
        #expect(try verdict("pki/localhost-chain.pem", "pki/root-ca-sha1.pem") == .meetsPolicy)
    }

    @Test func sha1SignatureBelowTheAnchorIsJudgedEvenWhenItIsTheLastButOne() throws {
        // The SHA-1 leaf directly above its anchor: only the anchor's own signature is exempt.
        let failure = violation(try verdict("pki/localhost-sha1.pem", "pki/intermediate-ca.pem"))
        #expect(failure?.requirement == .certificateSignatureDigest)
    }

    @Test func unreadableCertificateFailsRatherThanBeingSkipped() throws {
        let failure = violation(CertificateStrengthPolicy().check(validatedChain: [Data([0x30, 0x03, 0x02, 0x01, 0x01])]))
        #expect(failure?.requirement == .certificateKeySize)
    }
}

@Suite struct TransportSecurityExceptionTableTests {
    func table(_ exceptions: TransportSecurityException...) throws -> TransportSecurityExceptionTable {
        try TransportSecurityExceptionTable(exceptions)
    }

    @Test func hostWithoutAnExceptionGetsTheATSDefaults() throws {
        let exceptions = try table(TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv10))
        #expect(exceptions.requirements(for: "api.example.com") == .ats)
        #expect(TransportSecurityRequirements.ats.minimumTLSVersion == .tlsv12)
        #expect(TransportSecurityRequirements.ats.requiresForwardSecrecy)
    }

    @Test func exceptionAppliesToItsDomainCaseInsensitively() throws {
        let exceptions = try table(TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv11))
        #expect(exceptions.requirements(for: "Legacy.Example.com.").minimumTLSVersion == .tlsv11)
    }

    @Test func exceptionCoversSubdomainsOnlyWithIncludesSubdomains() throws {
        let exceptions = try table(
            TransportSecurityException(domain: "example.com", requiresForwardSecrecy: false),
            TransportSecurityException(domain: "example.net", includesSubdomains: true, requiresForwardSecrecy: false))
        #expect(exceptions.requirements(for: "api.example.com") == .ats)
        #expect(exceptions.requirements(for: "b.example.net").requiresForwardSecrecy == false)
        #expect(exceptions.requirements(for: "example.net").requiresForwardSecrecy == false)
    }

    /// Apple's `NSIncludesSubdomains`: `example.com` covers `math.example.com` and
    /// `history.example.com`, not `advanced.math.example.com`.
    @Test func includesSubdomainsReachesOneLabelBelowTheDomainAsInATS() throws {
        let exceptions = try table(TransportSecurityException(domain: "example.com", includesSubdomains: true, minimumTLSVersion: .tlsv10))
        #expect(exceptions.requirements(for: "math.example.com").minimumTLSVersion == .tlsv10)
        #expect(exceptions.requirements(for: "history.example.com").minimumTLSVersion == .tlsv10)
        #expect(exceptions.requirements(for: "advanced.math.example.com") == .ats)
    }

    @Test func mostSpecificExceptionWins() throws {
        let exceptions = try table(
            TransportSecurityException(domain: "example.com", includesSubdomains: true, minimumTLSVersion: .tlsv10),
            TransportSecurityException(domain: "api.example.com", minimumTLSVersion: .tlsv13))
        #expect(exceptions.requirements(for: "api.example.com").minimumTLSVersion == .tlsv13)
        #expect(exceptions.requirements(for: "www.example.com").minimumTLSVersion == .tlsv10)
    }

    @Test func wildcardDomainIsRefused() {
        #expect(throws: PinStoreError.self) { try table(TransportSecurityException(domain: "*.example.com")) }
    }

    @Test func sameDomainTwiceIsRefused() {
        #expect(throws: PinStoreError.self) {
            try table(TransportSecurityException(domain: "example.com"), TransportSecurityException(domain: "EXAMPLE.com", includesSubdomains: true))
        }
    }

    @Test func storeRefusesAMalformedExceptionDomain() throws {
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.example.net/list.json")!,
                                                   publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64")
                                                       .trimmingCharacters(in: .whitespacesAndNewlines),
                                                   storageDirectory: try TestResources.temporaryDirectory())
        configuration.transportSecurityExceptions = [TransportSecurityException(domain: "..bad")]
        #expect(throws: PinStoreError.self) { try PinStore(configuration: configuration) }
    }

    @Test func leafNamesGetAnExceptionOnlyWhenEveryNameHasIt() throws {
        let exceptions = try table(TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv10))
        #expect(exceptions.requirements(forLeafDNSNames: ["legacy.example.com"], ipAddresses: []).minimumTLSVersion == .tlsv10)
        #expect(exceptions.requirements(forLeafDNSNames: ["legacy.example.com", "api.example.com"], ipAddresses: []) == .ats)
    }

    @Test func wildcardLeafGetsAnExceptionOnlyFromADomainCoveringEverySubdomain() throws {
        let exact = try table(TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv10))
        #expect(exact.requirements(forLeafDNSNames: ["*.example.com"], ipAddresses: []) == .ats)
        let covering = try table(TransportSecurityException(domain: "example.com", includesSubdomains: true, minimumTLSVersion: .tlsv11))
        #expect(covering.requirements(forLeafDNSNames: ["*.example.com"], ipAddresses: []).minimumTLSVersion == .tlsv11)
    }

    @Test func lowestMinimumIsTheFloorForASharedConfiguration() throws {
        #expect(try table().lowestMinimumTLSVersion == .tlsv12)
        let exceptions = try table(TransportSecurityException(domain: "a.example.com", minimumTLSVersion: .tlsv11),
                                   TransportSecurityException(domain: "b.example.com", minimumTLSVersion: .tlsv13))
        #expect(exceptions.lowestMinimumTLSVersion == .tlsv11)
    }
}

/// The evaluator applies the certificate minimums right after chain validation, before pins.
@Suite struct TransportSecurityEvaluationTests {
    func store(pinning certificate: String, exceptions: [TransportSecurityException] = []) throws -> PinStore {
        let fingerprint = try TestResources.certificate(certificate).fingerprintBase64
        let list = #"{"fingerprints":[{"name":"localhost","fingerprint":"\#(fingerprint)","expires":4102444799}]}"#
        var configuration = PinStore.Configuration(serviceURL: URL(string: "https://pins.example.net/list.json")!,
                                                   publicKey: try TestResources.fixtureText("keys/list-signing.pub.b64")
                                                       .trimmingCharacters(in: .whitespacesAndNewlines),
                                                   fallbackData: Data(list.utf8),
                                                   storageDirectory: try TestResources.temporaryDirectory())
        configuration.transportSecurityExceptions = exceptions
        return try PinStore(configuration: configuration)
    }

    func decision(_ store: PinStore, chain: String, anchor: String = "pki/root-ca.pem") throws -> PinningDecision {
        let evaluator = PinningEvaluator(store: store, trustRoots: .anchors([try TestResources.certificate(anchor)]),
                                         updateOnEmpty: false, updateOnMismatch: false)
        return evaluator.evaluateNow(host: "localhost", presentedChain: try TestResources.chainDER(chain))
    }

    func requirement(_ decision: PinningDecision) -> TransportSecurityRequirement? {
        if let violation = decision.failure?.reason.transportSecurityViolation { return violation.requirement }
        return nil
    }

    @Test func pinnedSHA1SignedLeafIsRefusedWithTheDigestRequirement() throws {
        let refused = try decision(try store(pinning: "pki/localhost-sha1.pem"), chain: "pki/localhost-sha1-chain.pem")
        #expect(requirement(refused) == .certificateSignatureDigest)
    }

    @Test func pinnedRSA1024LeafIsRefusedWithTheKeySizeRequirement() throws {
        let refused = try decision(try store(pinning: "pki/localhost-rsa1024.pem"), chain: "pki/localhost-rsa1024-chain.pem")
        #expect(requirement(refused) == .certificateKeySize)
    }

    @Test func forwardSecrecyExceptionLiftsTheCertificateMinimums() throws {
        let exception = TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)
        #expect(try decision(try store(pinning: "pki/localhost-sha1.pem", exceptions: [exception]), chain: "pki/localhost-sha1-chain.pem").isAllowed)
        #expect(try decision(try store(pinning: "pki/localhost-rsa1024.pem", exceptions: [exception]), chain: "pki/localhost-rsa1024-chain.pem").isAllowed)
    }

    @Test func minimumVersionExceptionDoesNotLiftTheCertificateMinimums() throws {
        let exception = TransportSecurityException(domain: "localhost", minimumTLSVersion: .tlsv10)
        let refused = try decision(try store(pinning: "pki/localhost-sha1.pem", exceptions: [exception]), chain: "pki/localhost-sha1-chain.pem")
        #expect(requirement(refused) == .certificateSignatureDigest)
    }

    @Test func weakChainIsRefusedForItsWeaknessBeforeAnyPinIsConsulted() throws {
        // Pinned to another certificate: the refusal names the minimum, not the pin mismatch.
        let refused = try decision(try store(pinning: "pki/localhost.pem"), chain: "pki/localhost-rsa1024-chain.pem")
        #expect(requirement(refused) == .certificateKeySize)
    }

    @Test func exceptionNeverRelaxesTheNormalTrustEvaluation() throws {
        let exception = TransportSecurityException(domain: "localhost", minimumTLSVersion: .tlsv10, requiresForwardSecrecy: false)
        let refused = try decision(try store(pinning: "pki/rogue-leaf.pem", exceptions: [exception]), chain: "pki/rogue-leaf.pem")
        guard case .chainNotTrusted? = refused.failure?.reason else {
            Issue.record("expected chainNotTrusted, got \(refused)")
            return
        }
    }

    @Test func exceptionNeverRelaxesThePins() throws {
        let exception = TransportSecurityException(domain: "localhost", requiresForwardSecrecy: false)
        let refused = try decision(try store(pinning: "pki/localhost.pem", exceptions: [exception]), chain: "pki/localhost-rsa1024-chain.pem")
        #expect(refused.failure?.reason == .pinMismatch)
    }

    @Test func chainUnderAnAnchorSelfSignedWithSHA1IsAllowed() throws {
        #expect(try decision(try store(pinning: "pki/localhost.pem"), chain: "pki/localhost-chain.pem", anchor: "pki/root-ca-sha1.pem").isAllowed)
    }

    @Test func refusalSaysWhichRequirementFailedAndWhatToDo() throws {
        let refused = try decision(try store(pinning: "pki/localhost-rsa1024.pem"), chain: "pki/localhost-rsa1024-chain.pem")
        let text = try #require(refused.failure).description
        #expect(text.contains("certificateKeySize at depth 0"))
        #expect(text.contains("RSA key of 1024 bits"))
        #expect(text.contains("NSExceptionRequiresForwardSecrecy"))
    }
}

@Suite struct TransportSecurityExceptionImportTests {
    func plist(_ domains: String) -> Data {
        Data("""
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict>
        <key>NSExceptionDomains</key><dict>\(domains)</dict></dict></dict></plist>
        """.utf8)
    }

    @Test func exceptionKeysAreReadPerDomain() throws {
        let exceptions = try PinPolicyImport.transportSecurityExceptions(infoPlist: plist("""
            <key>legacy.example.com</key><dict>
              <key>NSIncludesSubdomains</key><true/>
              <key>NSExceptionMinimumTLSVersion</key><string>TLSv1.1</string>
              <key>NSExceptionRequiresForwardSecrecy</key><false/>
            </dict>
            <key>api.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLSv1.3</string></dict>
            """))
        #expect(exceptions == [
            TransportSecurityException(domain: "api.example.com", minimumTLSVersion: .tlsv13),
            TransportSecurityException(domain: "legacy.example.com", includesSubdomains: true, minimumTLSVersion: .tlsv11,
                                       requiresForwardSecrecy: false),
        ])
    }

    @Test func plistWithoutExceptionDomainsHasNoExceptions() throws {
        let empty = Data(#"<?xml version="1.0"?><plist version="1.0"><dict><key>CFBundleName</key><string>App</string></dict></plist>"#.utf8)
        #expect(try PinPolicyImport.transportSecurityExceptions(infoPlist: empty).isEmpty)
    }

    @Test func unknownVersionStringIsRefusedWithItsLocation() {
        let error = #expect(throws: PinPolicyImportError.self) {
            try PinPolicyImport.transportSecurityExceptions(infoPlist: plist(
                "<key>legacy.example.com</key><dict><key>NSExceptionMinimumTLSVersion</key><string>TLS1.1</string></dict>"))
        }
        #expect(error?.location == "NSAppTransportSecurity.NSExceptionDomains.legacy.example.com.NSExceptionMinimumTLSVersion")
    }

    @Test func misspelledKeyIsRefused() {
        let error = #expect(throws: PinPolicyImportError.self) {
            try PinPolicyImport.transportSecurityExceptions(infoPlist: plist(
                "<key>legacy.example.com</key><dict><key>NSExceptionRequiresForwardSecurity</key><false/></dict>"))
        }
        #expect(error?.location.hasSuffix("NSExceptionRequiresForwardSecurity") == true)
    }

    @Test func insecureHTTPLoadsIsAcceptedAndRelaxesNothing() throws {
        let exceptions = try PinPolicyImport.transportSecurityExceptions(infoPlist: plist(
            "<key>legacy.example.com</key><dict><key>NSExceptionAllowsInsecureHTTPLoads</key><true/></dict>"))
        #expect(exceptions == [TransportSecurityException(domain: "legacy.example.com")])
    }
}
