import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Android's `XmlConfigTests` (frameworks/base/tests/NetworkSecurityConfigTest) with its
/// `res/xml` fixtures, and the structure AOSP's `XmlConfigSource` refuses, replayed against
/// ``PinPolicyImport/networkSecurityConfig(_:)`` and the store.
///
/// Fixtures marked "verbatim" are Android's files as they are (their pins are android.com's
/// keys or fake digests, so they are only imported, not matched); "adapted" ones keep the
/// structure and put Fixtures/pki keys in the pin-set so that the store can decide chains.
///
/// Differences PinStore keeps on purpose, each stated by a test: a pin-set needs two distinct
/// pins, an expired pin-set fails closed, `overridePins` overrides nothing, a host without pins
/// is refused, unknown elements and empty pin-sets are refused rather than skipped.
@Suite struct AndroidXmlConfigCaseTests {
    typealias P = PeerCase

    /// Android's test digest for android.com (pins1.xml, nested_domains.xml, domain_whitespace.xml).
    static let androidComPin = "zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w="

    static func pin(_ digest: String) -> String { "<pin digest=\"SHA-256\">\(digest)</pin>" }

    /// A `pin-set` with `digests` (one per line), optionally with an expiration.
    static func pinSet(_ digests: [String], expiration: String? = nil) -> String {
        let attribute = expiration.map { " expiration=\"\($0)\"" } ?? ""
        return "<pin-set\(attribute)>\n" + digests.map { "      " + pin($0) }.joined(separator: "\n") + "\n    </pin-set>"
    }

    static func policies(_ xml: String) throws -> [PinPolicy] { try P.networkSecurityConfig(xml) }

    static func store(_ xml: String, clock: ManualClock = .inValidPeriod()) throws -> PinStore {
        try P.store(policies(xml), clock: clock)
    }

    // MARK: - XmlConfigTests, verbatim fixtures: what the import yields

    // testEmptyConfigFile (empty_config.xml): nothing pinned.
    @Test func testEmptyConfigFile() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
        </network-security-config>
        """
        #expect(try Self.policies(xml).isEmpty)
    }

    // testBasicDomainConfig (domain1.xml): trust anchors only, so android.com has no pins.
    @Test func testBasicDomainConfig() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
          </base-config>
          <domain-config>
            <domain>android.com</domain>
            <trust-anchors>
              <certificates src="system" />
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """
        #expect(try Self.policies(xml).isEmpty)
    }

    // testMultipleDomains (multiple_domains.xml) and testIncludeSubdomains (subdomains.xml):
    // anchors only, accepted, nothing pinned.
    @Test func testMultipleDomainsAndIncludeSubdomainsWithoutPins() throws {
        let multipleDomains = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
          </base-config>
          <domain-config>
            <domain>android.com</domain>
            <domain>google.com</domain>
            <trust-anchors>
              <certificates src="system" />
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """
        let subdomains = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
          </base-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            <trust-anchors>
              <certificates src="system" />
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """
        #expect(try Self.policies(multipleDomains).isEmpty)
        #expect(try Self.policies(subdomains).isEmpty)
    }

    // testMultipleDomainConfigs (multiple_configs.xml): two domain-configs, accepted, no pins.
    @Test func testMultipleDomainConfigs() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
          </base-config>
          <domain-config>
            <domain>android.com</domain>
            <trust-anchors>
              <certificates src="system" />
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
          <domain-config>
            <domain>google.com</domain>
            <trust-anchors>
              <certificates src="system" />
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """
        #expect(try Self.policies(xml).isEmpty)
    }

    // testNestedDomainConfigs (nested_domains.xml): the parent has no pins, the nested child has
    // one; a base-config after the domain-config is fine.
    @Test func testNestedDomainConfigs() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
            <domain-config>
              <domain includeSubdomains="true">android.com</domain>
              <trust-anchors>
                  <certificates src="system" />
              </trust-anchors>
              <!-- nested config that adds pins -->
              <domain-config>
                  <domain>developer.android.com</domain>
                  <pin-set>
                      <pin digest="SHA-256">zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=</pin>
                  </pin-set>
              </domain-config>
            </domain-config>
            <base-config cleartextTrafficPermitted="false">
            </base-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies.map(\.domain) == ["developer.android.com"])
        #expect(policies.first?.includesSubdomains == false)
        #expect(policies.first?.pins == [.anyKey(spkiSHA256Base64: Self.androidComPin)])
    }

    // testNestedDomainConfigsOverride (nested_domains_override.xml): attributes only, accepted.
    @Test func testNestedDomainConfigsOverride() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
            <base-config cleartextTrafficPermitted="false">
            </base-config>
            <!-- Nested config that overrides parent -->
            <domain-config cleartextTrafficPermitted="true">
                <domain includeSubdomains="true">android.com</domain>
                <domain-config cleartextTrafficPermitted="false">
                    <domain>developer.android.com</domain>
                </domain-config>
            </domain-config>
        </network-security-config>
        """
        #expect(try Self.policies(xml).isEmpty)
    }

    // testAttributes (attributes.xml): Android's base-config attributes, hstsEnforced included.
    // XmlConfigSource.parseConfigEntry reads hstsEnforced and cleartextTrafficPermitted on every
    // config entry; the import refuses hstsEnforced as an unknown attribute.
    @Test func testAttributes() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config cleartextTrafficPermitted="false" hstsEnforced="true">
          </base-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies.isEmpty)
    }

    // XmlConfigSource.parseConfigEntry (newer AOSP): <certificateTransparency enabled=.../> is
    // allowed in base-config and domain-config; a file using it still declares its pins.
    @Test func aCertificateTransparencyElementIsAccepted() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <certificateTransparency enabled="true" />
          </base-config>
          <domain-config>
            <domain>android.com</domain>
            <certificateTransparency enabled="false" />
            \(Self.pinSet([P.fake1, P.fake2]))
          </domain-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies.map(\.domain) == ["android.com"])
    }

    // testDebugOverridesDisabled / testBasicDebugOverrides (debug_basic.xml) and
    // testDebugOverridesWithDomain / testDebugInherit (debug_domain.xml): debug-overrides and
    // resource anchors are accepted and pin nothing.
    @Test func testDebugOverridesFixtures() throws {
        let debugBasic = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
          </base-config>
          <debug-overrides>
            <trust-anchors>
              <certificates src="system" />
            </trust-anchors>
          </debug-overrides>
        </network-security-config>
        """
        let debugDomain = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <trust-anchors>
              <certificates src="@raw/ca_certs_pem" />
            </trust-anchors>
          </domain-config>
          <debug-overrides>
            <trust-anchors>
              <certificates src="@raw/test_debug_ca" />
            </trust-anchors>
          </debug-overrides>
        </network-security-config>
        """
        #expect(try Self.policies(debugBasic).isEmpty)
        #expect(try Self.policies(debugDomain).isEmpty)
    }

    // testDebugDedup (override_dedup.xml): the domain's pin is imported; debug-overrides is not.
    @Test func testDebugDedup() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <!-- Entry with a bad pin. Connections to this will only succeed if overridePins is set. -->
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
            </pin-set>
            <trust-anchors>
              <certificates src="system" overridePins="false" />
            </trust-anchors>
          </domain-config>
          <debug-overrides>
            <trust-anchors>
              <certificates src="system" />
            </trust-anchors>
          </debug-overrides>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies.map(\.domain) == ["android.com"])
        #expect(policies.first?.pins == [.anyKey(spkiSHA256Base64: "aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=")])
    }

    // testDomainWhitespaceTrimming (domain_whitespace.xml): names and the pin are trimmed.
    @Test func testDomainWhitespaceTrimming() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com
            </domain>
            <domain>   developer.android.com    </domain>
            <pin-set>
              <pin digest="SHA-256">  zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=  </pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(Set(policies.map(\.domain)) == ["android.com", "developer.android.com"])
        #expect(policies.allSatisfy { $0.pins == [.anyKey(spkiSHA256Base64: Self.androidComPin)] })
    }

    // testBasicPinning (pins1.xml): Android pins android.com with ONE pin. The import reads it;
    // the store refuses it for want of a backup pin.
    @Test func aOnePinPinSetImportsButTheStoreRefusesItUnlikeAndroid() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">zCTnfLwLKbS9S2sbp+uFz4KZOocFvXxkV06Ce9O5M2w=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies == [PinPolicy(domain: "android.com", pins: [.anyKey(spkiSHA256Base64: Self.androidComPin)])])
        #expect(P.configurationError(policies)?.code == .invalidConfiguration)
    }

    // testExpiredPin (expired_pin.xml): the expiration is read (as the start of the day, UTC).
    @Test func testExpiredPinExpirationIsRead() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <!-- Invalid pin that has expired -->
            <pin-set expiration="2015-01-01">
              <pin digest="SHA-256">aaaaaaaaaaa2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """
        let policies = try Self.policies(xml)
        #expect(policies.count == 1)
        #expect(policies.first?.expiration == P.utcDay(2015, 1, 1))
    }

    // MARK: - XmlConfigTests, adapted fixtures: what the store decides

    // testBasicPinning (pins1.xml, with a backup pin): android.com's key passes.
    @Test func testBasicPinning() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain("localhost-chain")) == .trusted)
        #expect(P.check(store, "android.com", try P.chain(P.a)) == .trusted)
    }

    // testBadPin (bad_pin.xml, with a second wrong pin): android.com refuses the chain; google.com
    // is not pinned (Android connects to it; PinStore reports it unpinned, `.empty`).
    @Test func testBadPin() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            \(Self.pinSet(["1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=", P.fake1]))
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain("localhost-chain")) == .untrusted)
        #expect(P.check(store, "google.com", try P.chain("localhost-chain")) == .empty)
    }

    // testMultipleDomains (multiple_domains.xml with a pin-set): both names share the pins;
    // developer.android.com is not covered.
    @Test func testMultipleDomainsShareOnePinSet() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <domain>google.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
          </domain-config>
        </network-security-config>
        """)
        for host in ["android.com", "google.com"] {
            #expect(P.check(store, host, try P.chain(P.a)) == .trusted)
            #expect(P.check(store, host, try P.chain(P.b)) == .untrusted)
        }
        #expect(P.check(store, "developer.android.com", try P.chain(P.b)) == .empty)
    }

    // testMultipleDomainConfigs (multiple_configs.xml with a pin-set each): two configs, two pin sets.
    @Test func testMultipleDomainConfigsKeepTheirOwnPins() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
          </domain-config>
          <domain-config>
            <domain>google.com</domain>
            \(Self.pinSet([try P.spki(P.c), P.fake2]))
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain(P.c)) == .untrusted)
        #expect(P.check(store, "google.com", try P.chain(P.c)) == .trusted)
        #expect(P.check(store, "google.com", try P.chain(P.a)) == .untrusted)
    }

    // testIncludeSubdomains (subdomains.xml with a pin-set): the domain and every subdomain, at any depth.
    @Test func testIncludeSubdomainsPinsEveryDepth() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "developer.android.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "developer.android.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "a.b.developer.android.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "google.com", try P.chain(P.a)) == .empty)
        #expect(P.check(store, "notandroid.com", try P.chain(P.b)) == .empty)
    }

    // testNestedDomainConfigs (nested_domains.xml with pins in both): the child's own pin-set is
    // the most specific match for its name; the parent's pins do not admit a chain there.
    @Test func testNestedDomainConfigsChildPinsWin() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            \(Self.pinSet([try P.spki(P.intermediate), P.fake1]))
            <domain-config>
              <domain>developer.android.com</domain>
              \(Self.pinSet([try P.spki(P.c), P.fake2]))
            </domain-config>
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "developer.android.com", try P.chain("localhost-chain")) == .untrusted)
        #expect(P.check(store, "developer.android.com", try P.chain(P.c)) == .trusted)
        #expect(P.check(store, "www.android.com", try P.chain("localhost-chain")) == .trusted)
        #expect(P.check(store, "android.com", try P.chain(P.c)) == .untrusted)
    }

    // testNestedDomainConfigs: a nested config without a pin-set inherits its parent's
    // (NetworkSecurityConfig.Builder.getEffectivePinSet).
    @Test func aNestedDomainConfigInheritsItsParentsPinSet() throws {
        let xml = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
            <domain-config cleartextTrafficPermitted="false">
              <domain>developer.android.com</domain>
            </domain-config>
          </domain-config>
        </network-security-config>
        """
        let child = try #require(try Self.policies(xml).first { $0.domain == "developer.android.com" })
        #expect(child.pins == [.anyKey(spkiSHA256Base64: try P.spki(P.a)), .anyKey(spkiSHA256Base64: P.fake1)])
        let store = try Self.store(xml)
        #expect(P.check(store, "developer.android.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "developer.android.com", try P.chain(P.b)) == .untrusted)
    }

    // ApplicationConfig.getConfigForHostname: a separate (not nested) domain-config naming
    // developer.android.com without a pin-set is Android's exact match, and it has no pins: Android
    // does not pin developer.android.com. PinStore leaves pinless configs out of the import, so the
    // parent's includeSubdomains pins still cover that host (stricter: it fails closed).
    @Test func aPinlessDomainConfigDoesNotUnpinItsHostUnlikeAndroid() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            \(Self.pinSet([try P.spki(P.a), P.fake1]))
          </domain-config>
          <domain-config>
            <domain>developer.android.com</domain>
            <trust-anchors>
              <certificates src="system" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "developer.android.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "developer.android.com", try P.chain(P.a)) == .trusted)
    }

    // testExpiredPin (expired_pin.xml with a second wrong pin): Android ignores an expired
    // pin-set and connects on trust alone. PinStore fails closed: the expired policy no longer
    // applies and the unpinned host is refused.
    @Test func expiredPinSetFailsClosedUnlikeAndroid() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            \(Self.pinSet(["aaaaaaaaaaa2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=", P.fake1], expiration: "2015-01-01"))
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain("localhost-chain")) == .empty)
    }

    // testOverridesPins (override_pins.xml with a second wrong pin): Android lets a trust anchor
    // with overridePins="true" bypass the pins. PinStore imports no anchors, and nothing
    // overrides a pin: the chain is refused.
    @Test func overridePinsDoesNotBypassPinsUnlikeAndroid() throws {
        let store = try Self.store("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            \(Self.pinSet(["aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=", P.fake1]))
            <trust-anchors>
              <certificates src="system" overridePins="true" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """)
        #expect(P.check(store, "android.com", try P.chain("localhost-chain")) == .untrusted)
    }

    // MARK: - What XmlConfigSource refuses (testBadConfig0-5 and every other ParserException)

    /// A file Android's parser refuses, and the lines the refusal may name (Android reports the
    /// parser's position, the end of the offending element for some checks).
    struct Refused: Sendable, CustomTestStringConvertible {
        let name: String
        let xml: String
        let lines: Set<Int>
        var testDescription: String { name }
    }

    static let refused: [Refused] = [
        Refused(name: "testBadConfig0: unknown pin digest algorithm", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <!-- Bad pin digest -->
              <pin digest="I am probably not an algorithm">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [7]),
        Refused(name: "testBadConfig1: pin without a digest attribute", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
            <!-- Unknown pin digest -->
              <pin>1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [7]),
        Refused(name: "testBadConfig2: empty pin", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <!-- empty digest -->
              <pin digest="SHA-256"></pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [7]),
        Refused(name: "testBadConfig3: the same domain in two domain-configs", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
          </domain-config>
          <domain-config>
            <!-- Same domain name used in two configs -->
            <domain>android.com</domain>
          </domain-config>
        </network-security-config>
        """, lines: [8]),
        Refused(name: "testBadConfig4: domain in base-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <!-- domains are not allowed in base-config -->
            <domain>android.com</domain>
          </base-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "bad_config5.xml: pin-set in base-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <!-- pins are not allowed in base-config -->
            <pin-set>
            </pin-set>
          </base-config>
        </network-security-config>
        """, lines: [5, 6]),
        Refused(name: "has already been specified: pin-sets in both configs", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCA=</pin>
              <pin digest="SHA-256">DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [11]),
        Refused(name: "has already been specified: twice in one domain-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <domain>android.com</domain>
          </domain-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "has already been specified: includeSubdomains is not relevant", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
          </domain-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
          </domain-config>
        </network-security-config>
        """, lines: [7]),
        Refused(name: "has already been specified: after trim and lower-casing", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
          </domain-config>
          <domain-config>
            <domain>  Android.COM </domain>
          </domain-config>
        </network-security-config>
        """, lines: [7]),
        Refused(name: "has already been specified: repeated in a nested domain-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            <domain-config>
              <domain>android.com</domain>
            </domain-config>
          </domain-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "Only one base-config allowed", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
          </base-config>
          <base-config>
          </base-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "Only one debug-overrides allowed", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <debug-overrides>
          </debug-overrides>
          <debug-overrides>
          </debug-overrides>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "domain element not allowed in debug-overrides", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <debug-overrides>
            <domain>android.com</domain>
          </debug-overrides>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "pin-set element not allowed in debug-overrides", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <debug-overrides>
            <pin-set>
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
            </pin-set>
          </debug-overrides>
        </network-security-config>
        """, lines: [4, 5, 6]),
        Refused(name: "Multiple pin-set elements not allowed", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
            <pin-set>
              <pin digest="SHA-256">CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCA=</pin>
              <pin digest="SHA-256">DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [9]),
        Refused(name: "Multiple trust-anchor elements not allowed (domain-config)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <trust-anchors>
              <certificates src="system" />
            </trust-anchors>
            <trust-anchors>
              <certificates src="user" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """, lines: [8]),
        Refused(name: "Multiple trust-anchor elements not allowed (base-config)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
            </trust-anchors>
            <trust-anchors>
            </trust-anchors>
          </base-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "Nested domain-config not allowed in base-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <domain-config>
              <domain>android.com</domain>
            </domain-config>
          </base-config>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "Nested domain-config not allowed in debug-overrides", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <debug-overrides>
            <domain-config>
              <domain>android.com</domain>
            </domain-config>
          </debug-overrides>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "No domain elements in domain-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <trust-anchors>
              <certificates src="system" />
            </trust-anchors>
          </domain-config>
        </network-security-config>
        """, lines: [3, 7]),
        Refused(name: "Domain name missing", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain></domain>
          </domain-config>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "Domain name missing (empty element)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true"/>
          </domain-config>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "domain contains additional elements", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com<pin-set/></domain>
          </domain-config>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "Invalid expiration date in pin-set (month 13)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set expiration="2015-13-01">
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "Invalid expiration date in pin-set (not a date)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set expiration="next year">
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "Unsupported pin digest algorithm: SHA-1", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-1">WlpaWlpaWlpaWlpaWlpaWlpaWlo=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "Invalid pin digest (not Base64)", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">not*base64*at*all</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "digest length does not match expected length for SHA-256", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">WlpaWlpaWlpaWlpaWlpaWlpaWlo=</pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "pin contains additional elements", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=<pin/></pin>
              <pin digest="SHA-256">BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA=</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """, lines: [6]),
        Refused(name: "certificates element missing src attribute", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
              <certificates overridePins="true" />
            </trust-anchors>
          </base-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "Unknown certificates src", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config>
            <trust-anchors>
              <certificates src="everyone" />
            </trust-anchors>
          </base-config>
        </network-security-config>
        """, lines: [5]),
        Refused(name: "certificateTransparency not allowed in debug-overrides", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <debug-overrides>
            <certificateTransparency enabled="true" />
          </debug-overrides>
        </network-security-config>
        """, lines: [4]),
        Refused(name: "the root element is not network-security-config", xml: """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-configuration>
          <domain-config>
            <domain>android.com</domain>
          </domain-config>
        </network-security-configuration>
        """, lines: [2]),
    ]

    @Test(arguments: refused)
    func refusedAsAndroidRefusesIt(_ file: Refused) throws {
        let error = P.importError { try Self.policies(file.xml) }
        #expect(error.map { file.lines.map { "line \($0)" }.contains($0.location) } == true,
                "refused at \(error?.location ?? "-"), Android refuses at line \(file.lines.sorted())")
    }

    // Not refused by Android: a parent and a child name in separate configs (only the same name is).
    @Test func aParentAndAChildNameAreNoDuplicate() throws {
        let policies = try Self.policies("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain includeSubdomains="true">android.com</domain>
            \(Self.pinSet([P.fake1, P.fake2]))
          </domain-config>
          <domain-config>
            <domain includeSubdomains="true">developer.android.com</domain>
            \(Self.pinSet([P.fake1, P.fake2]))
          </domain-config>
        </network-security-config>
        """)
        #expect(policies.map(\.domain) == ["android.com", "developer.android.com"])
    }

    // Pin.isSupportedDigestAlgorithm: "SHA-256".equalsIgnoreCase(algorithm).
    @Test func thePinDigestAlgorithmNameIsCaseInsensitiveAsOnAndroid() throws {
        let policies = try Self.policies("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
              <pin digest="sha-256">\(P.fake1)</pin>
              <pin digest="Sha-256">\(P.fake2)</pin>
            </pin-set>
          </domain-config>
        </network-security-config>
        """)
        #expect(policies.first?.pins == [.anyKey(spkiSHA256Base64: P.fake1), .anyKey(spkiSHA256Base64: P.fake2)])
    }

    // XmlConfigSource skips elements it does not know (XmlUtils.skipCurrentTag); PinStore refuses
    // them, since a misspelled <pin-set> would silently leave a host unpinned.
    @Test func unknownElementsAreRefusedUnlikeAndroid() throws {
        let error = P.importError { try Self.policies("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pinset>
              <pin digest="SHA-256">\(P.fake1)</pin>
            </pinset>
          </domain-config>
        </network-security-config>
        """) }
        #expect(error?.location == "line 5")
    }

    // Android accepts an empty <pin-set> in a domain-config (it pins nothing); PinStore refuses it.
    @Test func anEmptyPinSetIsRefusedUnlikeAndroid() throws {
        let error = P.importError { try Self.policies("""
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <domain-config>
            <domain>android.com</domain>
            <pin-set>
            </pin-set>
          </domain-config>
        </network-security-config>
        """) }
        #expect(error?.location.hasPrefix("line ") == true)
    }

    // MARK: - The same claims written in code (Android's rule: no name twice, includeSubdomains
    // or not), refused when the store is made

    @Test func theSameExactDomainTwiceIsRefused() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", [P.fake1, P.fake2]),
                                          P.anyKeyPolicy("example.com", [try P.spki(P.a), P.fake2])])
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aDomainAndTheSameDomainWithSubdomainsAreRefused() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", [P.fake1, P.fake2]),
                                          P.anyKeyPolicy("example.com", [try P.spki(P.a), P.fake2], includesSubdomains: true)])
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aDomainWithSubdomainsAndTheDoubleAsteriskPatternAreRefused() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", [P.fake1, P.fake2], includesSubdomains: true),
                                          P.anyKeyPolicy("**.example.com", [try P.spki(P.a), P.fake2])])
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func theSameOneLabelWildcardTwiceIsRefused() throws {
        let error = P.configurationError([P.anyKeyPolicy("*.example.com", [P.fake1, P.fake2]),
                                          P.anyKeyPolicy("*.Example.com", [try P.spki(P.a), P.fake2])])
        #expect(error?.code == .invalidConfiguration)
    }

    // `**.example.com` names example.com itself as `example.com` with subdomains does, and
    // Android refuses android.com beside android.com with includeSubdomains.
    @Test func aDomainAndTheDoubleAsteriskPatternOnItAreRefused() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", [P.fake1, P.fake2]),
                                          P.anyKeyPolicy("**.example.com", [try P.spki(P.a), P.fake2])])
        #expect(error?.code == .invalidConfiguration)
    }

    // Not the same specificity, so no duplicate: an exact name, a one-label wildcard and an
    // any-depth pattern over it; each host gets the most specific one's pins.
    @Test func anExactAOneLabelAndAnAnyDepthPolicyAreAccepted() throws {
        let store = try P.store([P.anyKeyPolicy("api.example.com", [try P.spki(P.a), P.fake1]),
                                 P.anyKeyPolicy("*.example.com", [try P.spki(P.b), P.fake1]),
                                 P.anyKeyPolicy("**.example.com", [try P.spki(P.c), P.fake1])])
        #expect(P.check(store, "api.example.com", try P.chain(P.a)) == .trusted)
        #expect(P.check(store, "api.example.com", try P.chain(P.b)) == .untrusted)
        #expect(P.check(store, "www.example.com", try P.chain(P.b)) == .trusted)
        #expect(P.check(store, "www.example.com", try P.chain(P.c)) == .untrusted)
        #expect(P.check(store, "a.b.example.com", try P.chain(P.c)) == .trusted)
        #expect(P.check(store, "example.com", try P.chain(P.c)) == .trusted)
    }
}
