import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Which static policy supplies a host's pins when several match (the most specific one, as
/// Apple, Android and TrustKit choose), how enforcement and expiry combine with that, and how
/// the policies combine with the signed list (union). Decided by the store over fixture chains
/// (`matchPins(commonName:certificateChain:)` checks pins only, so any name can be tried).
@Suite struct PolicySpecificityTests {
    static func spki(_ certificate: String) throws -> String { try PinPolicyTests.spki(certificate) }
    static let backup = PinPolicyTests.backup
    static func chain(_ name: String) throws -> [Data] { try TestResources.chainDER("pki/\(name).pem") }

    /// A policy for `domain` with `pin` and the backup pin.
    static func policy(_ domain: String, includesSubdomains: Bool = false, _ pin: PinIdentity,
                       expiration: Date? = nil, reportOnly: Bool = false) -> PinPolicy {
        var policy = PinPolicy(domain: domain, includesSubdomains: includesSubdomains,
                               pins: [pin, .leafKey(spkiSHA256Base64: backup)], expiration: expiration)
        policy.reportOnly = reportOnly
        return policy
    }

    static func intermediateCA() throws -> PinIdentity { .caKey(spkiSHA256Base64: try spki("intermediate-ca")) }
    static func attackerLeaf() throws -> PinIdentity { .leafKey(spkiSHA256Base64: try spki("attacker")) }

    // MARK: - The issue's cases

    /// Apple's documented example: `example.com` with `NSIncludesSubdomains` covers
    /// `math.example.com`, not `advanced.math.example.com`.
    @Test func appleSubdomainsReachOneLabelDownNotTwo() throws {
        let plist = PolicyPlist.pinnedDomains(["example.com": (subdomains: true, ca: [try Self.spki("intermediate-ca"), Self.backup], leaf: [])])
        let store = try PinPolicyTests.store(policies: PinPolicyImport.infoPlist(plist))
        #expect(store.matchPins(commonName: "example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
        #expect(store.matchPins(commonName: "math.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
        #expect(store.matchPins(commonName: "advanced.math.example.com", certificateChain: try Self.chain("localhost-chain")) == .empty)
    }

    /// The issue's first case: `example.com` (subdomains, the intermediate CA pinned) and
    /// `advanced.math.example.com` (a leaf key that does not match). ATS refuses the chain.
    @Test func aParentsCAPinDoesNotAdmitWhatTheHostsOwnApplePolicyRefuses() throws {
        let plist = PolicyPlist.pinnedDomains([
            "example.com": (subdomains: true, ca: [try Self.spki("intermediate-ca"), Self.backup], leaf: []),
            "advanced.math.example.com": (subdomains: false, ca: [], leaf: [try Self.spki("attacker"), Self.backup]),
        ])
        let store = try PinPolicyTests.store(policies: PinPolicyImport.infoPlist(plist))
        #expect(store.matchPins(commonName: "advanced.math.example.com", certificateChain: try Self.chain("localhost-chain")) == .untrusted)
        #expect(store.matchPins(commonName: "math.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    @Test func aBroadParentPolicysPinDoesNotAdmitWhatTheHostsOwnPolicyRefuses() throws {
        let store = try PinPolicyTests.store(policies: [
            Self.policy("**.example.com", try Self.intermediateCA()),
            Self.policy("api.example.com", try Self.attackerLeaf()),
        ])
        #expect(store.matchPins(commonName: "api.example.com", certificateChain: try Self.chain("localhost-chain")) == .untrusted)
        #expect(store.matchPins(commonName: "www.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    @Test func aOneLabelPolicyIsMoreSpecificThanAnAnyDepthOne() throws {
        let store = try PinPolicyTests.store(policies: [
            Self.policy("example.com", includesSubdomains: true, try Self.intermediateCA()),
            Self.policy("*.example.com", try Self.attackerLeaf()),
        ])
        #expect(store.matchPins(commonName: "api.example.com", certificateChain: try Self.chain("localhost-chain")) == .untrusted)
        #expect(store.matchPins(commonName: "v1.api.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
        #expect(store.matchPins(commonName: "example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    @Test func theLongestAnyDepthDomainDecides() throws {
        let store = try PinPolicyTests.store(policies: [
            Self.policy("example.com", includesSubdomains: true, try Self.intermediateCA()),
            Self.policy("api.example.com", includesSubdomains: true, try Self.attackerLeaf()),
        ])
        #expect(store.matchPins(commonName: "v1.api.example.com", certificateChain: try Self.chain("localhost-chain")) == .untrusted)
        #expect(store.matchPins(commonName: "v1.www.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    // MARK: - Enforcement and expiry

    @Test func aReportOnlyHostPolicyDoesNotSwitchOffAnEnforcingParent() throws {
        let store = try PinPolicyTests.store(policies: [
            Self.policy("**.example.com", try Self.intermediateCA()),
            Self.policy("api.example.com", try Self.attackerLeaf(), reportOnly: true),
        ])
        let decision = store.pinDecision(host: "api.example.com", validatedChain: try Self.chain("localhost-chain"))
        #expect(decision.failure?.reason == .pinMismatch)
        #expect(!decision.isAllowed)
    }

    @Test func aReportOnlyHostPolicyAloneOnlyReports() throws {
        let store = try PinPolicyTests.store(policies: [Self.policy("api.example.com", try Self.attackerLeaf(), reportOnly: true)])
        let decision = store.pinDecision(host: "api.example.com", validatedChain: try Self.chain("localhost-chain"))
        guard case .reportOnly = decision else {
            Issue.record("expected a report-only decision, got \(decision)")
            return
        }
    }

    /// The day the host's own pins lapse, the parent's broader pins must not take over.
    @Test func anExpiredHostPolicyLeavesItsHostUnpinnedNotToTheParent() throws {
        let clock = ManualClock.inValidPeriod()
        let store = try PinPolicyTests.store(policies: [
            Self.policy("**.example.com", try Self.intermediateCA()),
            Self.policy("api.example.com", try Self.attackerLeaf(), expiration: clock.now() + 60),
        ], clock: clock)
        #expect(store.matchPins(commonName: "api.example.com", certificateChain: try Self.chain("localhost-chain")) == .untrusted)
        clock.advance(60)
        #expect(store.matchPins(commonName: "api.example.com", certificateChain: try Self.chain("localhost-chain")) == .empty)
        #expect(store.matchPins(commonName: "api.example.com", fingerprint: try TestResources.certificate("pki/localhost.pem").fingerprint) != .trusted)
        #expect(store.matchPins(commonName: "www.example.com", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    @Test func anExpiredHostPolicyUnderAnEnforcingParentIsRefusedEvenInReportOnlyMode() throws {
        let clock = ManualClock.inValidPeriod()
        var configuration = try StoreFixtures.configuration(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("pinstore-specificity-\(UUID().uuidString)"))
        configuration.policies = [
            Self.policy("**.example.com", try Self.intermediateCA()),
            Self.policy("api.example.com", try Self.attackerLeaf(), expiration: clock.now() - 1),
        ]
        configuration.enforcement = .listReportOnly
        let store = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: clock)
        let decision = store.pinDecision(host: "api.example.com", validatedChain: try Self.chain("localhost-chain"))
        #expect(decision.failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - Ambiguity

    @Test func twoPoliciesForTheSameNameAreRefused() throws {
        for pair in [
            (Self.policy("example.com", try Self.intermediateCA()), Self.policy("EXAMPLE.com.", try Self.attackerLeaf())),
            (Self.policy("example.com", try Self.intermediateCA()), Self.policy("example.com", includesSubdomains: true, try Self.attackerLeaf())),
            (Self.policy("example.com", includesSubdomains: true, try Self.intermediateCA()), Self.policy("**.example.com", try Self.attackerLeaf())),
            (Self.policy("*.example.com", try Self.intermediateCA()), Self.policy("*.example.com", try Self.attackerLeaf())),
        ] {
            let error = #expect(throws: PinStoreError.self, "\(pair.0.domain) / \(pair.1.domain)") {
                try PinPolicyTests.store(policies: [pair.0, pair.1])
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.reason.contains("ambiguous") == true)
        }
    }

    @Test func anATSDomainWithAWildcardIsRefusedOnImport() throws {
        let plist = PolicyPlist.pinnedDomains(["*.example.com": (subdomains: false, ca: [try Self.spki("intermediate-ca"), Self.backup], leaf: [])])
        #expect(throws: PinPolicyImportError.self) { try PinPolicyImport.infoPlist(plist) }
    }

    // MARK: - The list and the policies

    @Test func theListAdmitsAChainTheHostsPolicyRefuses() throws {
        // fallback.json pins localhost.pem's certificate.
        let store = try PinPolicyTests.store(policies: [Self.policy("localhost", try Self.attackerLeaf())],
                                             fallback: TestResources.fixture("lists/fallback.json"))
        #expect(store.matchPins(commonName: "localhost", certificateChain: try Self.chain("localhost-chain")) == .trusted)
    }

    @Test func theHostsPolicyAdmitsAChainTheListRefuses() throws {
        let store = try PinPolicyTests.store(policies: [Self.policy("localhost", .leafKey(spkiSHA256Base64: try Self.spki("localhost-next")))],
                                             fallback: TestResources.fixture("lists/fallback.json"))
        #expect(store.matchPins(commonName: "localhost", certificateChain: try Self.chain("localhost-next-chain")) == .trusted)
        #expect(store.matchPins(commonName: "localhost", certificateChain: try Self.chain("attacker-chain")) == .untrusted)
    }
}

/// An `NSPinnedDomains` property list built in the test, as XML.
enum PolicyPlist {
    static func pinnedDomains(_ domains: [String: (subdomains: Bool, ca: [String], leaf: [String])]) -> Data {
        var text = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>NSAppTransportSecurity</key><dict><key>NSPinnedDomains</key><dict>"#
        for (domain, settings) in domains.sorted(by: { $0.key < $1.key }) {
            text += "<key>\(domain)</key><dict><key>NSIncludesSubdomains</key><\(settings.subdomains)/>"
            for (key, digests) in [("NSPinnedCAIdentities", settings.ca), ("NSPinnedLeafIdentities", settings.leaf)] where !digests.isEmpty {
                text += "<key>\(key)</key><array>"
                for digest in digests { text += "<dict><key>SPKI-SHA256-BASE64</key><string>\(digest)</string></dict>" }
                text += "</array>"
            }
            text += "</dict>"
        }
        text += "</dict></dict></dict></plist>"
        return Data(text.utf8)
    }
}
