import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Apple's documented `NSPinnedDomains` behaviour (Information Property List reference:
/// NSIncludesSubdomains, NSPinnedDomains, NSPinnedCAIdentities, NSPinnedLeafIdentities,
/// NSExceptionDomains; the "Identity Pinning" article), replayed through
/// ``PinPolicyImport/infoPlist(_:)`` and the store.
@Suite struct AppleNSPinnedDomainsCaseTests {
    typealias P = PeerCase

    /// One `NSPinnedDomains` entry.
    struct Entry {
        var domain: String
        var includesSubdomains: Bool?
        var ca: [String] = []
        var leaf: [String] = []
    }

    /// An Info.plist whose `NSAppTransportSecurity.NSPinnedDomains` holds `entries`.
    static func infoPlist(_ entries: [Entry]) -> String {
        func identities(_ key: String, _ digests: [String]) -> String {
            guard !digests.isEmpty else { return "" }
            let items = digests.map { "<dict><key>SPKI-SHA256-BASE64</key><string>\($0)</string></dict>" }
            return "<key>\(key)</key><array>\(items.joined())</array>"
        }
        let domains = entries.map { entry in
            let flag = entry.includesSubdomains.map { "<key>NSIncludesSubdomains</key><\($0 ? "true" : "false")/>" } ?? ""
            return "<key>\(entry.domain)</key><dict>\(flag)\(identities("NSPinnedCAIdentities", entry.ca))"
                + "\(identities("NSPinnedLeafIdentities", entry.leaf))</dict>"
        }
        return """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
          <key>NSAppTransportSecurity</key>
          <dict>
            <key>NSPinnedDomains</key>
            <dict>\(domains.joined(separator: "\n"))</dict>
          </dict>
        </dict>
        </plist>
        """
    }

    static func store(_ entries: [Entry]) throws -> PinStore {
        try P.store(P.infoPlist(infoPlist(entries)))
    }

    /// Apple's example: example.com with NSIncludesSubdomains, pinning the issuing CA (and the root as a backup).
    static func appleExample() throws -> PinStore {
        try store([Entry(domain: "example.com", includesSubdomains: true, ca: [try P.spki(P.intermediate), try P.spki(P.root)])])
    }

    // MARK: - NSIncludesSubdomains: the domain and one more label

    // NSIncludesSubdomains: "the configuration applies to example.com, as well as math.example.com
    // and history.example.com".
    @Test(arguments: ["example.com", "math.example.com", "history.example.com"])
    func nsIncludesSubdomainsCoversTheDomainAndOneMoreLabel(_ host: String) throws {
        let store = try Self.appleExample()
        #expect(P.check(store, host, try P.chain("localhost-chain")) == .trusted)
        #expect(P.check(store, host, try P.chain("localhost-other-ca-chain")) == .untrusted)
    }

    // NSIncludesSubdomains: "it doesn't apply to the subdomains advanced.math.example.com or
    // ancient.history.example.com because those subdomains have two additional path components".
    // Nothing else pins them, so they are unpinned.
    @Test(arguments: ["advanced.math.example.com", "ancient.history.example.com"])
    func nsIncludesSubdomainsDoesNotCoverTwoMoreLabels(_ host: String) throws {
        let store = try Self.appleExample()
        #expect(P.check(store, host, try P.chain("localhost-other-ca-chain")) == .empty)
    }

    // NSIncludesSubdomains: "If the value is NO the configuration applies only to example.com."
    @Test func withoutNSIncludesSubdomainsOnlyTheDomainIsPinned() throws {
        let ca = [try P.spki(P.intermediate), try P.spki(P.root)]
        for flag in [false, nil] as [Bool?] {
            let store = try Self.store([Entry(domain: "example.com", includesSubdomains: flag, ca: ca)])
            #expect(P.check(store, "example.com", try P.chain("localhost-other-ca-chain")) == .untrusted)
            #expect(P.check(store, "math.example.com", try P.chain("localhost-other-ca-chain")) == .empty)
        }
    }

    // The import's shape for NSIncludesSubdomains: the domain itself and a one-label wildcard,
    // with the same pins.
    @Test func nsIncludesSubdomainsImportsAsTheDomainAndAOneLabelWildcard() throws {
        let ca = [try P.spki(P.intermediate), try P.spki(P.root)]
        let policies = try P.infoPlist(Self.infoPlist([Entry(domain: "example.com", includesSubdomains: true, ca: ca)]))
        #expect(Set(policies.map(\.domain)) == ["example.com", "*.example.com"])
        #expect(policies.count == 2)
        #expect(policies.allSatisfy { !$0.includesSubdomains && $0.pins == ca.map { .caKey(spkiSHA256Base64: $0) } })
    }

    // A subdomain entry with NSIncludesSubdomains covers one label under itself: example.com and
    // math.example.com, both with subdomains, pin advanced.math.example.com through the latter.
    @Test func aSubdomainEntryCoversOneLabelUnderItself() throws {
        let store = try Self.store([
            Entry(domain: "example.com", includesSubdomains: true, ca: [try P.spki(P.intermediate), P.fake1]),
            Entry(domain: "math.example.com", includesSubdomains: true, leaf: [try P.spki(P.c), P.fake2]),
        ])
        #expect(P.check(store, "advanced.math.example.com", try P.chain("localhost-other-ca-chain")) == .trusted)
        #expect(P.check(store, "advanced.math.example.com", try P.chain("localhost-chain")) == .untrusted)
        #expect(P.check(store, "deeper.advanced.math.example.com", try P.chain("localhost-chain")) == .empty)
    }

    // MARK: - The most specific entry decides

    // Issue 24, case 1: example.com (subdomains, CA pin) and advanced.math.example.com (a leaf key
    // the chain does not have): ATS refuses [leaf, intermediate, root] for advanced.math.example.com.
    @Test func aParentCAPinDoesNotAdmitWhatTheHostsOwnLeafPinRefuses() throws {
        let store = try Self.store([
            Entry(domain: "example.com", includesSubdomains: true, ca: [try P.spki(P.intermediate), try P.spki(P.root)]),
            Entry(domain: "advanced.math.example.com", leaf: [P.fake1, P.fake2]),
        ])
        let chain = try P.chain("localhost-chain", P.root)
        #expect(P.check(store, "advanced.math.example.com", chain) == .untrusted)
        #expect(P.check(store, "math.example.com", chain) == .trusted)
    }

    // One label down: math.example.com's own leaf pin decides for it, not example.com's CA pin.
    @Test func theHostsOwnEntryWinsOverTheParentsOneLabelCoverage() throws {
        let store = try Self.store([
            Entry(domain: "example.com", includesSubdomains: true, ca: [try P.spki(P.intermediate), try P.spki(P.root)]),
            Entry(domain: "math.example.com", leaf: [try P.spki(P.b), P.fake1]),
        ])
        #expect(P.check(store, "math.example.com", try P.chain("localhost-chain")) == .untrusted)
        #expect(P.check(store, "math.example.com", try P.chain("attacker-chain")) == .trusted)
        #expect(P.check(store, "history.example.com", try P.chain("localhost-chain")) == .trusted)
    }

    // MARK: - Identities

    // NSPinnedCAIdentities: "at least one Certificate Authority (CA) or sub-CA certificate in the chain".
    @Test func aCAIdentityMatchesTheIntermediateOrTheRoot() throws {
        let intermediate = try Self.store([Entry(domain: "example.com", ca: [try P.spki(P.intermediate), P.fake1])])
        #expect(P.check(intermediate, "example.com", try P.chain("localhost-chain")) == .trusted)
        let root = try Self.store([Entry(domain: "example.com", ca: [try P.spki(P.root), P.fake1])])
        #expect(P.check(root, "example.com", try P.chain("localhost-chain", P.root)) == .trusted)
        #expect(P.check(root, "example.com", try P.chain("localhost-other-ca-chain", P.root)) == .trusted)
    }

    // NSPinnedCAIdentities: the leaf is no CA; its key in the CA list does not admit it.
    @Test func aCAIdentityDoesNotMatchTheLeaf() throws {
        let store = try Self.store([Entry(domain: "example.com", ca: [try P.spki(P.a), P.fake1])])
        #expect(P.check(store, "example.com", try P.chain("localhost-chain")) == .untrusted)
    }

    // NSPinnedLeafIdentities: "unless it can find the SPKI digest of the leaf certificate".
    @Test func aLeafIdentityMatchesOnlyTheLeaf() throws {
        let leaf = try Self.store([Entry(domain: "example.com", leaf: [try P.spki(P.a), P.fake1])])
        #expect(P.check(leaf, "example.com", try P.chain("localhost-chain")) == .trusted)
        #expect(P.check(leaf, "example.com", try P.chain("attacker-chain")) == .untrusted)
        let intermediateAsLeaf = try Self.store([Entry(domain: "example.com", leaf: [try P.spki(P.intermediate), P.fake1])])
        #expect(P.check(intermediateAsLeaf, "example.com", try P.chain("localhost-chain")) == .untrusted)
    }

    // NSPinnedDomains: "If you specify both, App Transport Security (ATS) requires a match in each category."
    @Test func leafAndCAIdentitiesMustBothMatch() throws {
        let store = try Self.store([Entry(domain: "example.com", ca: [try P.spki(P.intermediate), P.fake2],
                                          leaf: [try P.spki(P.a), P.fake1])])
        #expect(P.check(store, "example.com", try P.chain("localhost-chain")) == .trusted)
        #expect(P.check(store, "example.com", try P.chain("attacker-chain")) == .untrusted)
        #expect(P.check(store, "example.com", try P.chain(P.a, P.otherIntermediate)) == .untrusted)
    }

    // NSExceptionDomains (whose domain rules NSPinnedDomains follows): "Don't use wildcard
    // domains ... Instead, use example.com and set NSIncludesSubdomains to YES."
    @Test func aWildcardDomainKeyIsRefused() throws {
        let error = P.importError {
            try P.infoPlist(Self.infoPlist([Entry(domain: "*.example.com", ca: [try P.spki(P.intermediate), P.fake1])]))
        }
        #expect(error?.location.contains("*.example.com") == true)
    }
}
