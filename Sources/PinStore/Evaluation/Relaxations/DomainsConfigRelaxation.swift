/// A host nothing pins is allowed when the signed challenge-mode list in force says it needs
/// no pins (``DomainsConfig``). Only hosts without pins: a pinned host is never relaxed by it.
final class DomainsConfigRelaxation: PinFailureRelaxation {
    func relax(_ failure: PinningFailure, enforcing: Bool, _ connection: PinningContext) -> PinningDecision? {
        guard failure.reason.isNoPinsForHost, let config = connection.domainsConfig,
              !config.pinningRequired(for: connection.host.text) else { return nil }
        return .allow(validatedChain: connection.evidence.certificates)
    }

    /// The domains the domainsConfig names: each may need pins where its neighbours do not.
    func singledOutHosts(_ tables: PinningTables, into names: inout Set<String>) {
        if let domainsConfig = tables.domainsConfig { names.formUnion(domainsConfig.domains.keys) }
    }
}
