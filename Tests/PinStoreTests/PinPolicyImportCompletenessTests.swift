import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The importers' rule: an import yields every pin the file declares, or fails with the place
/// of the problem. Each case here was a file that imported partially, or silently lost pins.
@Suite struct PinPolicyImportCompletenessTests {
    static let pinA = Data(repeating: 0xA0, count: 32).base64EncodedString()
    static let pinB = Data(repeating: 0xB0, count: 32).base64EncodedString()
    static let pinC = Data(repeating: 0xC0, count: 32).base64EncodedString()

    static func xml(_ text: String) throws -> [PinPolicy] { try PinPolicyImport.networkSecurityConfig(Data(text.utf8)) }
    static func plist(_ text: String) throws -> [PinPolicy] { try PinPolicyImport.infoPlist(Data(text.utf8)) }
    static func importError(_ body: () throws -> [PinPolicy]) -> PinPolicyImportError? { PinPolicyImportTests.importError(body) }

    /// A config with one two-pin pin-set around `inner`.
    static func config(_ inner: String, attributes: String = "") -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config\(attributes)>
        \(inner)
        </network-security-config>
        """
    }

    static let pinSet = #"<pin-set><pin digest="SHA-256">\#(pinA)</pin><pin digest="SHA-256">\#(pinB)</pin></pin-set>"#

    // MARK: - network_security_config.xml: not well-formed

    @Test func anAndroidConfigCutOffInsideItsSecondDomainConfigIsRefused() throws {
        let whole = try TestResources.fixtureText("policies/network_security_config.xml")
        // Up to the end of the second config's <domain>, before its pin-set.
        let cut = try #require(whole.range(of: "pinstore.test</domain>")?.upperBound)
        let error = Self.importError { try PinPolicyImport.networkSecurityConfig(Data(whole[..<cut].utf8)) }
        #expect(error?.location.hasPrefix("line ") == true)
    }

    @Test func anAndroidConfigCutOffAfterAWholeDomainConfigIsRefused() throws {
        // Well-formed up to here: only the missing end of the root tells it is incomplete.
        let whole = try TestResources.fixtureText("policies/network_security_config.xml")
        let cut = try #require(whole.range(of: "</domain-config>")?.upperBound)
        let error = Self.importError { try PinPolicyImport.networkSecurityConfig(Data(whole[..<cut].utf8)) }
        #expect(error?.location.hasPrefix("line ") == true)
    }

    @Test func mismatchedTagsAreRefusedAsNotWellFormed() throws {
        let error = Self.importError {
            try Self.xml(Self.config("<domain-config><domain>a.example</domain>\(Self.pinSet)</domain-confg>"))
        }
        #expect(error?.location.hasPrefix("line ") == true)
    }

    @Test func aDOCTYPEIsRefusedWithItsLine() throws {
        let text = "<?xml version=\"1.0\"?>\n<!DOCTYPE network-security-config [<!ENTITY pin \"\(Self.pinA)\">]>\n"
            + "<network-security-config><domain-config><domain>a.example</domain><pin-set>"
            + "<pin digest=\"SHA-256\">&pin;</pin><pin digest=\"SHA-256\">\(Self.pinB)</pin></pin-set></domain-config></network-security-config>"
        let error = Self.importError { try Self.xml(text) }
        #expect(error?.location == "line 2")
        #expect(error?.reason.contains("DOCTYPE") == true)
    }

    // MARK: - network_security_config.xml: inheritance

    @Test func aNestedDomainConfigInheritsAPinSetWrittenAfterIt() throws {
        let policies = try Self.xml(Self.config("""
            <domain-config>
                <domain includeSubdomains="true">example.com</domain>
                <domain-config><domain>api.example.com</domain></domain-config>
                \(Self.pinSet)
            </domain-config>
            """))
        let nested = try #require(policies.first { $0.domain == "api.example.com" })
        #expect(nested.pins == [.anyKey(spkiSHA256Base64: Self.pinA), .anyKey(spkiSHA256Base64: Self.pinB)])
    }

    @Test func aDeeplyNestedDomainConfigInheritsFromItsNearestAncestorWithAPinSet() throws {
        let policies = try Self.xml(Self.config("""
            <domain-config>
                <domain>example.com</domain>
                <domain-config>
                    <domain>api.example.com</domain>
                    <domain-config><domain>v1.api.example.com</domain></domain-config>
                    <pin-set><pin digest="SHA-256">\(Self.pinB)</pin><pin digest="SHA-256">\(Self.pinC)</pin></pin-set>
                </domain-config>
                \(Self.pinSet)
            </domain-config>
            """))
        #expect(policies.first { $0.domain == "v1.api.example.com" }?.pins
                == [.anyKey(spkiSHA256Base64: Self.pinB), .anyKey(spkiSHA256Base64: Self.pinC)])
        #expect(policies.first { $0.domain == "example.com" }?.pins
                == [.anyKey(spkiSHA256Base64: Self.pinA), .anyKey(spkiSHA256Base64: Self.pinB)])
    }

    // MARK: - network_security_config.xml: structure outside the schema

    @Test func aMisspelledPinSetElementIsRefusedWithItsLine() throws {
        let error = Self.importError {
            try Self.xml(Self.config("<domain-config>\n<domain>a.example</domain>\n<pinset><pin digest=\"SHA-256\">\(Self.pinA)</pin></pinset>\n</domain-config>"))
        }
        #expect(error?.location == "line 5")
        #expect(error?.reason.contains("<pinset>") == true)
    }

    @Test func aMisspelledIncludeSubdomainsAttributeIsRefused() throws {
        let error = Self.importError {
            try Self.xml(Self.config(#"<domain-config><domain includeSubdomain="true">a.example</domain>\#(Self.pinSet)</domain-config>"#))
        }
        #expect(error?.reason.contains("includeSubdomain") == true)
    }

    @Test func aPinSetInBaseConfigIsRefusedRatherThanIgnored() throws {
        let error = Self.importError { try Self.xml(Self.config("<base-config>\(Self.pinSet)</base-config>")) }
        #expect(error?.reason.contains("<pin-set> is not allowed in <base-config>") == true)
    }

    @Test func textWhereNoneBelongsIsRefused() throws {
        let error = Self.importError {
            try Self.xml(Self.config("<domain-config><domain>a.example</domain><pin-set>\(Self.pinC)<pin digest=\"SHA-256\">\(Self.pinA)</pin><pin digest=\"SHA-256\">\(Self.pinB)</pin></pin-set></domain-config>"))
        }
        #expect(error?.reason.contains("text outside") == true)
    }

    @Test func aDomainDeclaredTwiceIsRefusedNamingTheFirstLine() throws {
        let error = Self.importError {
            try Self.xml(Self.config("<domain-config>\n<domain>a.example</domain>\n\(Self.pinSet)\n</domain-config>\n<domain-config>\n<domain>A.example</domain>\n</domain-config>"))
        }
        #expect(error?.location == "line 8")
        #expect(error?.reason.contains("line 4") == true)
    }

    // MARK: - network_security_config.xml: what Android's XmlConfigSource refuses

    /// Android: "includeSubdomains isn't relevant here ... Do not allow any duplicates period."
    @Test func aDomainDeclaredTwiceWithDifferentIncludeSubdomainsIsRefused() throws {
        let error = Self.importError {
            try Self.xml(Self.config(#"<domain-config><domain>a.example</domain>\#(Self.pinSet)</domain-config>"#
                + "\n" + #"<domain-config><domain includeSubdomains="true">a.example</domain>\#(Self.pinSet)</domain-config>"#))
        }
        #expect(error?.location == "line 4")
        #expect(error?.reason.contains("already declared") == true)
    }

    @Test func aSecondBaseConfigIsRefusedWithItsLine() throws {
        let error = Self.importError { try Self.xml(Self.config("<base-config/>\n<base-config/>")) }
        #expect(error?.location == "line 4")
        #expect(error?.reason.contains("second <base-config>") == true)
    }

    @Test func aSecondDebugOverridesIsRefused() throws {
        let error = Self.importError { try Self.xml(Self.config("<debug-overrides/>\n<debug-overrides/>")) }
        #expect(error?.reason.contains("second <debug-overrides>") == true)
    }

    @Test func twoTrustAnchorsInOneEntryAreRefused() throws {
        let error = Self.importError {
            try Self.xml(Self.config(#"<domain-config><domain>a.example</domain><trust-anchors/><trust-anchors/>\#(Self.pinSet)</domain-config>"#))
        }
        #expect(error?.reason.contains("second <trust-anchors>") == true)
    }

    @Test func trustAnchorsInANestedConfigAreItsOwn() throws {
        let policies = try Self.xml(Self.config(#"<domain-config><domain>a.example</domain><trust-anchors/>\#(Self.pinSet)"#
            + #"<domain-config><domain>b.a.example</domain><trust-anchors/></domain-config></domain-config>"#))
        #expect(policies.map(\.domain) == ["a.example", "b.a.example"])
    }

    @Test func certificatesWithoutAKnownSourceAreRefused() throws {
        for certificates in [#"<certificates/>"#, #"<certificates src="System"/>"#] {
            let error = Self.importError {
                try Self.xml(Self.config(#"<base-config><trust-anchors>\#(certificates)</trust-anchors></base-config>"#))
            }
            #expect(error?.reason.contains("<certificates") == true, "\(certificates)")
        }
        _ = try Self.xml(Self.config(#"<base-config><trust-anchors><certificates src="@raw/ca"/><certificates src="user"/></trust-anchors></base-config>"#))
    }

    /// Android compares the digest algorithm's name ignoring case.
    @Test func aPinDigestNameIsReadIgnoringCase() throws {
        let policies = try Self.xml(Self.config(#"<domain-config><domain>a.example</domain><pin-set><pin digest="sha-256">\#(Self.pinA)</pin><pin digest="Sha-256">\#(Self.pinB)</pin></pin-set></domain-config>"#))
        #expect(policies.first?.pins.count == 2)
    }

    @Test func androidStudioLintAttributesAreAccepted() throws {
        let policies = try Self.xml(Self.config(#"<domain-config tools:ignore="InsecureBaseConfiguration"><domain>a.example</domain>\#(Self.pinSet)</domain-config>"#,
                                                attributes: #" xmlns:tools="http://schemas.android.com/tools""#))
        #expect(policies.map(\.domain) == ["a.example"])
    }

    @Test func aPinInACDATASectionIsRead() throws {
        let policies = try Self.xml(Self.config(#"<domain-config><domain>a.example</domain><pin-set><pin digest="SHA-256"><![CDATA[\#(Self.pinA)]]></pin><pin digest="SHA-256">\#(Self.pinB)</pin></pin-set></domain-config>"#))
        #expect(policies.first?.pins == [.anyKey(spkiSHA256Base64: Self.pinA), .anyKey(spkiSHA256Base64: Self.pinB)])
    }

    // MARK: - Info.plist

    /// An Info.plist whose NSAppTransportSecurity holds `ats` (dictionary entries, XML).
    static func infoPlist(_ ats: String, top: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0">
        <dict>
        \(top)
        <key>NSAppTransportSecurity</key>
        <dict>
        \(ats)
        </dict>
        </dict>
        </plist>
        """
    }

    static func domain(_ name: String, _ pins: [String]) -> String {
        let identities = pins.map { "<dict><key>SPKI-SHA256-BASE64</key><string>\($0)</string></dict>" }.joined()
        return "<key>\(name)</key><dict><key>NSPinnedLeafIdentities</key><array>\(identities)</array></dict>"
    }

    @Test func aDomainWrittenTwiceInAnXMLPlistIsRefusedWithItsLine() throws {
        let error = Self.importError {
            try Self.plist(Self.infoPlist("<key>NSPinnedDomains</key><dict>\n\(Self.domain("a.example", [Self.pinA, Self.pinB]))\n\(Self.domain("a.example", [Self.pinB, Self.pinC]))\n</dict>"))
        }
        #expect(error?.location == "line 9")
        #expect(error?.reason.contains("a.example") == true)
    }

    @Test func aMisspelledPinnedDomainsKeyBesideTheRealOneIsRefused() throws {
        let error = Self.importError {
            try Self.plist(Self.infoPlist("<key>NSPinnedDomains</key><dict>\(Self.domain("a.example", [Self.pinA, Self.pinB]))</dict>"
                                          + "<key>NSPinnedDomain</key><dict>\(Self.domain("b.example", [Self.pinA, Self.pinB]))</dict>"))
        }
        #expect(error?.location == "NSAppTransportSecurity.NSPinnedDomain")
    }

    @Test func pinnedDomainsBothAtTheTopAndInATSAreRefused() throws {
        let error = Self.importError {
            try Self.plist(Self.infoPlist("<key>NSPinnedDomains</key><dict>\(Self.domain("a.example", [Self.pinA, Self.pinB]))</dict>",
                                          top: "<key>NSPinnedDomains</key><dict>\(Self.domain("b.example", [Self.pinA, Self.pinB]))</dict>"))
        }
        #expect(error?.location == "NSPinnedDomains")
    }

    @Test func anUnknownKeyInAnIdentityIsRefused() throws {
        let domain = "<key>a.example</key><dict><key>NSPinnedLeafIdentities</key><array>"
            + "<dict><key>SPKI-SHA256-BASE64</key><string>\(Self.pinA)</string><key>SPKI-SHA256-BASE64-NEXT</key><string>\(Self.pinC)</string></dict>"
            + "<dict><key>SPKI-SHA256-BASE64</key><string>\(Self.pinB)</string></dict></array></dict>"
        let error = Self.importError { try Self.plist(Self.infoPlist("<key>NSPinnedDomains</key><dict>\(domain)</dict>")) }
        #expect(error?.location == "NSAppTransportSecurity.NSPinnedDomains.a.example.NSPinnedLeafIdentities[0].SPKI-SHA256-BASE64-NEXT")
    }
}
