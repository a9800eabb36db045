import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// A rule that treats some hosts apart says which (``PinningRule/singledOutHosts(_:into:)``),
/// and the leaf view (AsyncHTTPClient, which sees only the leaf) asks the rules: a new rule is
/// honoured behind a wildcard leaf with no other edit.
@Suite struct RuleSingledOutHostsTests {
    /// A rule of this test only: refuses one host, whatever its pins.
    final class RefusesOneHost: PinningRule {
        let host: String

        init(host: String) {
            self.host = host
        }

        func check(_ connection: PinningContext) -> PinningRuleResult {
            connection.host.text == host ? .failsRule(.hostNotExpected, enforcing: true, relaxable: false) : .meetsRule
        }

        func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
            names.insert(host)
        }
    }

    static let now: Int64 = 1_893_456_000

    /// The store's rules with `extra` first, and a list pinning `wildcard.pem` (DNS:*.pinstore.test)
    /// for every host under `pinstore.test`.
    static func rules(adding extra: [any PinningRule]) -> PinningRules {
        let standard = PinningRules(enforcement: .enforced, expectedNames: nil, staticPins: .none)
        return PinningRules(rules: extra + standard.rules, relaxations: standard.relaxations)
    }

    static func tables() throws -> PinningTables {
        PinningTables(list: PinIndex(entries: [try PinningRulesTests.entry("wildcard", name: "*.pinstore.test")]), fallback: .empty,
                      domainsConfig: nil, certificateTransparency: nil)
    }

    static func wildcardLeaf() throws -> LeafView {
        try LeafView(leaf: try StoreFixtures.der("wildcard"), peerAddress: LeafPeer.notInLeaf)
    }

    @Test func theLeafViewRefusesAWildcardLeafForAHostATestRuleRefuses() throws {
        let leaf = try Self.wildcardLeaf()
        let tables = try Self.tables()
        // Without the rule the list lets the leaf through for every host under it.
        #expect(Self.rules(adding: []).leafDecision(leaf, tables: tables, now: Self.now).isAllowed)
        let rules = Self.rules(adding: [RefusesOneHost(host: "vault.pinstore.test")])
        // The chain-aware decision refuses the chain for that host...
        let chain = try #require(ValidatedChain(alreadyValidatedByCaller: [try StoreFixtures.der("wildcard"), try StoreFixtures.der("intermediate-ca")]))
        let connection = PinningContext(host: try HostName("vault.pinstore.test"), requestedName: "vault.pinstore.test",
                                        evidence: .validated(chain), list: tables.list, fallback: tables.fallback,
                                        domainsConfig: nil, now: Self.now)
        #expect(rules.decide(connection).failure?.reason == .hostNotExpected)
        // ...so the leaf view, which cannot tell which host was asked for, refuses the leaf.
        let decision = rules.leafDecision(leaf, tables: tables, now: Self.now)
        #expect(decision.failure?.reason == .hostNotExpected, "\(decision)")
        #expect(decision.failure?.host == "vault.pinstore.test")
    }

    @Test func theRulesListGathersTheHostsEveryRuleSinglesOut() throws {
        let rules = Self.rules(adding: [RefusesOneHost(host: "vault.pinstore.test")])
        #expect(rules.singledOutHosts(try Self.tables()) == ["vault.pinstore.test"])
    }
}
