import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

/// The leaf view (AsyncHTTPClient) against the chain-aware decision, on generated
/// configurations: whenever the leaf view lets a leaf through, the chain-aware evaluator lets
/// its chain through for every host swift-nio-ssl would accept that leaf for.
///
/// Configurations mix signed list entries (exact, `*.`, certificate and key pins at depths 0
/// and 1, CA key pins), static policies (`*.`, `**.`, includeSubdomains, an address,
/// report-only, requiresMatchInEachCategory), deny pins, the three enforcement levels,
/// domainsConfig and expected names. Hosts are written in several forms (case, trailing dot,
/// IPv6 text forms). A failure prints the seed: set `PINSTORE_DIFFERENTIAL_SEED` to replay it.
@Suite struct LeafViewDifferentialTests {
    /// Leaf fixtures, with the intermediate that issued each.
    static let leaves: [(name: String, issuer: String)] = [
        ("localhost", "intermediate-ca"),          // DNS:localhost, IP:127.0.0.1
        ("attacker", "intermediate-ca"),           // the same names, another key
        ("localhost-other-ca", "other-intermediate-ca"),
        ("wildcard", "intermediate-ca"),           // DNS:*.pinstore.test
        ("api-p256", "intermediate-ca"),           // DNS:api.pinstore.test
        ("wrong-host", "intermediate-ca"),         // DNS:wrong.pinstore.test
        ("ip-only", "intermediate-ca"),            // IP:127.0.0.1
        ("www-and-ip", "intermediate-ca"),         // DNS:www.example.com, IP:127.0.0.1
        ("wildcard-example", "intermediate-ca"),   // DNS:*.example.com
        ("api-example", "intermediate-ca"),        // DNS:api.example.com
        ("star-only", "intermediate-ca"),          // DNS:* (any one-label host for swift-nio-ssl)
        ("partial-star", "intermediate-ca"),       // DNS:pay*
    ]
    static let certificates = leaves.map(\.name) + ["intermediate-ca", "other-intermediate-ca"]
    static let names = ["localhost", "127.0.0.1", "api.pinstore.test", "www.pinstore.test", "*.pinstore.test",
                        "wrong.pinstore.test", "pinstore.test", "other.example", "api.example.com", "www.example.com",
                        "*.example.com", "0:0::1", "payments"]
    static let policyDomains: [(String, Bool)] = [("localhost", false), ("*.pinstore.test", false), ("**.pinstore.test", false),
                                                  ("pinstore.test", true), ("api.pinstore.test", false), ("127.0.0.1", false),
                                                  ("www.pinstore.test", false), ("*.example.com", false), ("api.example.com", false),
                                                  ("example.com", true)]
    /// Hosts a leaf naming the peer's address may be presented for: any at all.
    static let anyHosts = ["localhost", "LocalHost.", "127.0.0.1", "api.pinstore.test", "www.pinstore.test", "x.pinstore.test",
                           "wrong.pinstore.test", "other.example", "unpinned.example", "api.example.com", "WWW.example.com.",
                           "[::1]", "0:0::1", "payments"]
    static let now = ChainValidatorTests.now
    static let timestamp: Int64 = 1_893_456_000

    struct Material {
        let der: [String: Data]
        let spki: [String: String]
        let chains: [String: [Data]]
        let anchors: TrustRoots
        let signingKey: P256PrivateKey

        init() throws {
            var der: [String: Data] = [:]
            var spki: [String: String] = [:]
            for name in LeafViewDifferentialTests.certificates {
                let certificate = try TestResources.certificate("pki/\(name).pem")
                der[name] = certificate.derRepresentation
                spki[name] = certificate.spkiSHA256Base64
            }
            var chains: [String: [Data]] = [:]
            for (leaf, issuer) in LeafViewDifferentialTests.leaves {
                chains[leaf] = [der[leaf]!, der[issuer]!]
            }
            self.der = der
            self.spki = spki
            self.chains = chains
            self.anchors = .anchors([try TestResources.certificate("pki/root-ca.pem")])
            self.signingKey = try StoreFixtures.signingKey()
        }
    }

    /// One generated configuration, described for the failure message.
    struct Case {
        var configuration: PinStore.Configuration
        var body: Data
        var description: String
    }

    static func generate(_ rng: inout SeededRandom, _ material: Material, directory: URL) throws -> Case {
        var text: [String] = []
        var entries: [FingerprintEntry] = []
        var seen = Set<String>()
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            let name = names.randomElement(using: &rng)!
            let certificate = certificates.randomElement(using: &rng)!
            let isCA = certificate.hasSuffix("-ca")
            let depth = isCA ? 1 : 0
            let kind: FingerprintEntry.Kind = isCA ? [.certificate, .publicKey, .caPublicKey].randomElement(using: &rng)!
                : [.certificate, .publicKey].randomElement(using: &rng)!
            let digest = kind == .certificate ? SHA256Digest.hash(material.der[certificate]!)
                : Data(base64Encoded: material.spki[certificate]!)!
            guard seen.insert("\(name)|\(certificate)|\(kind)").inserted else { continue }
            entries.append(FingerprintEntry(name: name, fingerprint: digest, expires: 4_102_444_799,
                                            depth: kind == .caPublicKey ? 0 : depth, kind: kind))
            text.append("entry \(name) -> \(certificate) \(kind)")
        }
        var body = try FingerprintListSigner.challengeModeBody(entries, timestamp: timestamp)
        if Bool.random(using: &rng) {
            let unlisted = Bool.random(using: &rng)
            var domains: [String] = []
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                let name = names.filter { !$0.hasPrefix("*") }.randomElement(using: &rng)!
                domains.append(#"{"name": "\#(name)", "sslPinningRequired": \#(Bool.random(using: &rng))}"#)
            }
            let config = #"{"sslPinningRequiredForUnlisted": \#(unlisted), "domains": [\#(domains.joined(separator: ", "))]}"#
            body = DomainsConfigTests.inserting(config, into: body)
            text.append("domainsConfig \(config)")
        }
        var configuration = try StoreFixtures.configuration(directory: directory, useChallenge: true)
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let (domain, subdomains) = policyDomains.randomElement(using: &rng)!
            let leaf = leaves.randomElement(using: &rng)!.name
            let ca = ["intermediate-ca", "other-intermediate-ca"].randomElement(using: &rng)!
            let pin: PinIdentity = [
                .leafKey(spkiSHA256Base64: material.spki[leaf]!),
                .certificate(sha256Base64: SHA256Digest.hash(material.der[leaf]!).base64EncodedString()),
                .caKey(spkiSHA256Base64: material.spki[ca]!),
                .anyKey(spkiSHA256Base64: material.spki[[leaf, ca].randomElement(using: &rng)!]!),
                .key(spkiSHA256Base64: material.spki[ca]!, depth: 1),
                .certificate(sha256Base64: SHA256Digest.hash(material.der[ca]!).base64EncodedString(), depth: nil),
            ].randomElement(using: &rng)!
            let reportOnly = Int.random(in: 0..<4, using: &rng) == 0
            let eachCategory = Int.random(in: 0..<4, using: &rng) == 0
            configuration.policies.append(PinPolicy(domain: domain, includesSubdomains: subdomains,
                                                    pins: [pin, .leafKey(spkiSHA256Base64: PinPolicyTests.backup)],
                                                    requiresMatchInEachCategory: eachCategory, reportOnly: reportOnly))
            text.append("policy \(domain)\(subdomains ? " +subdomains" : "") \(pin)\(reportOnly ? " report-only" : "")\(eachCategory ? " each-category" : "")")
        }
        if Int.random(in: 0..<6, using: &rng) == 0 {
            let denied = ["attacker", "other-intermediate-ca"].randomElement(using: &rng)!
            configuration.deniedPublicKeys = [material.spki[denied]!]
            text.append("denied \(denied)")
        }
        configuration.enforcement = [.enforced, .enforced, .listReportOnly, .reportOnly].randomElement(using: &rng)!
        text.append("enforcement \(configuration.enforcement)")
        if Int.random(in: 0..<4, using: &rng) == 0 {
            let expected = names.filter { !$0.hasPrefix("*") && Bool.random(using: &rng) }
            configuration.expectedCommonNames = expected.isEmpty ? ["localhost"] : expected
            text.append("expected \(configuration.expectedCommonNames!)")
        }
        return Case(configuration: configuration, body: body, description: text.joined(separator: "; "))
    }

    /// The hosts swift-nio-ssl accepts `leaf` for over a connection from `peer`, written in
    /// several forms, with made-up labels under a wildcard.
    static func presentableHosts(_ leaf: X509Certificate, peer: String, rng: inout SeededRandom) -> [String] {
        if leaf.ipAddresses.contains(where: { IPAddressText.canonical($0) == IPAddressText.canonical(peer) }) {
            return anyHosts
        }
        var hosts: [String] = []
        for name in leaf.dnsNames {
            if !name.contains("."), name.contains("*") {
                // No parent domain: swift-nio-ssl matches one-label hosts.
                let prefix = name.prefix { $0 != "*" }
                hosts += ["payments", "localhost", "pay"].filter { $0.hasPrefix(prefix) }
            } else if name.hasPrefix("*.") {
                let parent = name.dropFirst(2)
                hosts += ["api", "www", "wrong", "x", "h\(UInt16.random(in: 0...UInt16.max, using: &rng))"].map { "\($0).\(parent)" }
            } else {
                hosts += [name, name.uppercased(), name + "."]
            }
        }
        return hosts
    }

    @Test func theLeafViewIsNeverMorePermissiveThanTheChainAwareDecision() async throws {
        let seed = ProcessInfo.processInfo.environment["PINSTORE_DIFFERENTIAL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var rng = SeededRandom(seed: seed)
        let material = try Material()
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let parsedLeaves = try Dictionary(uniqueKeysWithValues: Self.leaves.map { ($0.name, try X509Certificate(derRepresentation: material.der[$0.name]!)) })
        var leafViewAllowed = 0
        var comparisons = 0
        for index in 0..<800 {
            let generated = try Self.generate(&rng, material, directory: directory.url.appendingPathComponent("\(index)"))
            let store: PinStore
            do {
                store = try PinStore(configuration: generated.configuration,
                                     fetcher: ScriptedFetcher(ScriptedFetcher.challengeResponder(generated.body, key: material.signingKey)),
                                     clock: ManualClock.inValidPeriod())
            } catch {
                continue   // a configuration the store refuses (e.g. a policy on a public suffix) pins nothing
            }
            _ = await store.update()
            let evaluator = PinningEvaluator(store: store, trustRoots: material.anchors, updateOnEmpty: false, updateOnMismatch: false)
            for (leafName, _) in Self.leaves {
                let peer = ["127.0.0.1", "::1"].randomElement(using: &rng)!
                let leafDecision = store.leafDecision(leaf: material.der[leafName]!, peerAddress: peer)
                guard leafDecision.isAllowed else { continue }
                leafViewAllowed += 1
                for host in Self.presentableHosts(parsedLeaves[leafName]!, peer: peer, rng: &rng) {
                    comparisons += 1
                    let chainAware = evaluator.evaluateNow(host: host, presentedChain: material.chains[leafName]!, at: Self.now)
                    if !chainAware.isAllowed {
                        Issue.record("""
                            seed \(seed), case \(index): the leaf view allowed \(leafName) from \(peer) (\(leafDecision)), \
                            the chain-aware decision for \(host) refused it (\(chainAware)). Configuration: \(generated.description)
                            """)
                        return
                    }
                }
            }
        }
        // The property says nothing unless the leaf view allowed often enough to be tested.
        #expect(leafViewAllowed > 100, "seed \(seed): only \(leafViewAllowed) leaves allowed")
        #expect(comparisons > 300, "seed \(seed): only \(comparisons) comparisons")
    }
}
