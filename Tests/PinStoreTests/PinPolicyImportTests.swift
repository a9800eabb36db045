import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Apple `NSPinnedDomains` and Android `network_security_config.xml` imports, from the
/// real-world shaped files in Fixtures/policies.
@Suite struct PinPolicyImportTests {
    static func spki(_ certificate: String) throws -> String { try PinPolicyTests.spki(certificate) }
    static func plist(_ name: String) throws -> [PinPolicy] { try PinPolicyImport.infoPlist(TestResources.fixture("policies/\(name)")) }
    static func xml(_ name: String) throws -> [PinPolicy] { try PinPolicyImport.networkSecurityConfig(TestResources.fixture("policies/\(name)")) }

    static func importError(_ body: () throws -> [PinPolicy]) -> PinPolicyImportError? {
        do {
            let policies = try body()
            Issue.record("expected an import error, got \(policies)")
            return nil
        } catch let error as PinPolicyImportError {
            return error
        } catch {
            Issue.record("expected a PinPolicyImportError, got \(error)")
            return nil
        }
    }

    // MARK: - Info.plist

    @Test func infoPlistDomainsBecomePoliciesWithTheirIdentityKinds() throws {
        let policies = try Self.plist("Info.plist")
        #expect(policies.map(\.domain) == ["127.0.0.1", "localhost", "pinstore.test", "*.pinstore.test"])
        let localhost = try #require(policies.first { $0.domain == "localhost" })
        #expect(localhost.pins == [.leafKey(spkiSHA256Base64: try Self.spki("localhost")), .leafKey(spkiSHA256Base64: try Self.spki("localhost-next"))])
        #expect(!localhost.includesSubdomains && !localhost.requiresMatchInEachCategory)
        // NSIncludesSubdomains: the domain and one label below it, as two policies.
        let domain = try #require(policies.first { $0.domain == "pinstore.test" })
        let oneLabelBelow = try #require(policies.first { $0.domain == "*.pinstore.test" })
        #expect(!domain.includesSubdomains && !oneLabelBelow.includesSubdomains)
        #expect(domain.pins == [.caKey(spkiSHA256Base64: try Self.spki("intermediate-ca")), .caKey(spkiSHA256Base64: try Self.spki("root-ca"))])
        #expect(oneLabelBelow.pins == domain.pins)
    }

    @Test func aBinaryInfoPlistImportsLikeTheXMLOne() throws {
        let xml = try TestResources.fixture("policies/Info.plist")
        let object = try PropertyListSerialization.propertyList(from: xml, options: [], format: nil)
        let binary = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        #expect(binary.prefix(6) == Data("bplist".utf8))
        #expect(try PinPolicyImport.infoPlist(binary) == Self.plist("Info.plist"))
    }

    @Test func aDomainWithLeafAndCAIdentitiesNeedsAMatchInEach() throws {
        let policy = try #require(try Self.plist("Info.plist").first { $0.domain == "127.0.0.1" })
        #expect(policy.requiresMatchInEachCategory)
        let store = try PinPolicyTests.store(policies: [policy])
        #expect(try PinPolicyTests.decide(store, "localhost-chain", host: "127.0.0.1").isAllowed)
        // The renewed leaf has the same key under the same CA; the other-CA leaf has neither.
        #expect(try PinPolicyTests.decide(store, "localhost-renewed-chain", host: "127.0.0.1").isAllowed)
        #expect(try PinPolicyTests.decide(store, "attacker-chain", host: "127.0.0.1").failure?.reason == .pinMismatch)
    }

    @Test func anImportedInfoPlistPinsLiveChains() throws {
        let store = try PinPolicyTests.store(policies: try Self.plist("Info.plist"))
        #expect(try PinPolicyTests.decide(store, "localhost-renewed-chain").isAllowed)
        #expect(try PinPolicyTests.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func aBadDigestInAPlistIsNamedByItsKeyPath() throws {
        let error = Self.importError { try Self.plist("Info-bad-digest.plist") }
        #expect(error?.location == "NSAppTransportSecurity.NSPinnedDomains.localhost.NSPinnedLeafIdentities[1].SPKI-SHA256-BASE64")
    }

    @Test func aMisspelledPlistKeyIsRefusedRatherThanDropped() throws {
        let error = Self.importError { try Self.plist("Info-misspelled-key.plist") }
        #expect(error?.location.hasSuffix(".NSPinnedCAIdentity") == true)
    }

    @Test func anInfoPlistWithoutPinnedDomainsIsRefusedAsPinningNothing() throws {
        let plist = try PropertyListSerialization.data(fromPropertyList: ["CFBundleIdentifier": "test.pinstore.app"], format: .xml, options: 0)
        let error = Self.importError { try PinPolicyImport.infoPlist(plist) }
        #expect(error?.location == "NSAppTransportSecurity.NSPinnedDomains")
    }

    @Test func aTruncatedPlistIsRefused() throws {
        #expect(Self.importError { try Self.plist("Info-truncated.plist") }?.location == "plist")
    }

    // MARK: - network_security_config.xml

    @Test func androidPinSetsBecomePoliciesAndNestedConfigsInheritThem() throws {
        let policies = try Self.xml("network_security_config.xml")
        #expect(policies.map(\.domain).sorted() == ["api.pinstore.test", "localhost", "pinstore.test"])
        let localhost = try #require(policies.first { $0.domain == "localhost" })
        #expect(localhost.pins == [.anyKey(spkiSHA256Base64: try Self.spki("localhost")), .anyKey(spkiSHA256Base64: try Self.spki("localhost-next"))])
        #expect(localhost.expiration == Date(timeIntervalSince1970: 4_070_908_800))   // 2099-01-01T00:00:00Z
        let nested = try #require(policies.first { $0.domain == "api.pinstore.test" })
        #expect(!nested.includesSubdomains)
        #expect(nested.pins == policies.first { $0.domain == "pinstore.test" }?.pins)
        #expect(policies.first { $0.domain == "pinstore.test" }?.includesSubdomains == true)
    }

    @Test func anImportedAndroidConfigPinsLiveChains() throws {
        let store = try PinPolicyTests.store(policies: try Self.xml("network_security_config.xml"))
        #expect(try PinPolicyTests.decide(store, "localhost-renewed-chain").isAllowed)
        #expect(try PinPolicyTests.decide(store, "attacker-chain").failure?.reason == .pinMismatch)
    }

    @Test func aNonSHA256PinIsRefusedWithItsLine() throws {
        let error = Self.importError { try Self.xml("network_security_config-sha1.xml") }
        #expect(error?.location == "line 14")
        #expect(error?.reason.contains("SHA-256") == true)
    }

    @Test func aBadExpirationIsRefusedWithItsLine() throws {
        #expect(Self.importError { try Self.xml("network_security_config-bad-expiration.xml") }?.location == "line 11")
    }

    @Test func malformedXMLIsRefusedWithALine() throws {
        let error = Self.importError { try Self.xml("network_security_config-malformed.xml") }
        #expect(error?.location.hasPrefix("line ") == true)
    }

    @Test func aWildcardOnAPublicSuffixIsRefused() throws {
        let xml = #"<network-security-config><domain-config><domain includeSubdomains="true">co.uk</domain><pin-set><pin digest="SHA-256">\#(PinPolicyTests.backup)</pin></pin-set></domain-config></network-security-config>"#
        #expect(Self.importError { try PinPolicyImport.networkSecurityConfig(Data(xml.utf8)) } != nil)
    }
}

/// `TrustRoots.anchors(pem:)`: a private CA given once, as PEM text.
@Suite struct TrustRootsFromPEMTests {
    @Test func thePEMsCertificatesAreTheAnchors() throws {
        let roots = try TrustRoots.anchors(pem: TestResources.fixtureText("pki/root-ca.pem"))
        #expect(roots.anchors.map(\.fingerprint) == [try TestResources.certificate("pki/root-ca.pem").fingerprint])
        #expect(!roots.includesSystemStore)
    }

    @Test func textWithoutACertificateIsRefused() {
        #expect(throws: PinStoreError.self) { try TrustRoots.anchors(pem: "no certificate here") }
    }

    @Test func aChainUnderThePEMsRootValidates() throws {
        let roots = try TrustRoots.anchors(pem: TestResources.fixtureText("pki/root-ca.pem"))
        let evaluator = PinningEvaluator(store: try PinPolicyTests.store(fallback: TestResources.fixture("lists/fallback.json")),
                                         trustRoots: roots, updateOnEmpty: false, updateOnMismatch: false)
        #expect(evaluator.evaluateNow(host: "localhost", presentedChain: try TestResources.chainDER("pki/localhost-chain.pem"),
                                      at: PinPolicyTests.now).isAllowed)
    }
}
