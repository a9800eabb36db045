import Foundation

/// The server's per-domain switch (the deployed clients' 1.9 `domainsConfig` member): which
/// hosts need pins at all.
///
/// ```json
/// {"timestamp": 1893456000, "fingerprints": [...],
///  "domainsConfig": {"sslPinningRequiredForUnlisted": false,
///                    "domains": [{"name": "api.example.com", "sslPinningRequired": true}]}}
/// ```
///
/// Read **only** from a challenge-mode response, whose whole body the signature covers. A static
/// list's per-entry signatures do not cover it (whoever answers the list request could add it and
/// switch pinning off), and fallback data is not signed at all: there it is ignored, as the
/// deployed clients ignore it in fallback data. A static list with PinStore's whole-list
/// signature is not an exception either (one rule, easy to audit).
///
/// It only ever answers one question, for a host the store holds no pin for: may the connection
/// go on after the normal trust evaluation? A host with pins is checked against them whatever
/// `domainsConfig` says (pins only strengthen), and expected hosts and deny pins still apply.
///
/// Names match exactly, after ``HostName`` normalization (ASCII lowercase, no trailing dot, an
/// IPv6 address in its canonical form, so `0:0::1` names the host `[::1]`): no
/// wildcards and no subdomains, so an entry can never cover more hosts than it names. An entry
/// named `*.example.com` matches no host. A name listed twice counts as required if any of its
/// entries says so.
struct DomainsConfig: Sendable, Hashable {
    /// Whether a host not in ``domains`` needs pins. True when the member is absent.
    let pinningRequiredForUnlisted: Bool
    /// Normalized name -> whether that host needs pins.
    let domains: [String: Bool]

    /// Whether the server says `host` (a ``HostName/text``) needs pins.
    func pinningRequired(for host: String) -> Bool {
        domains[host] ?? pinningRequiredForUnlisted
    }

    /// The `domainsConfig` member of a verified challenge-mode `body`, or nil when it has none.
    ///
    /// - Throws: ``PinStoreError/Code/invalidListData`` when the member is there but malformed:
    ///   not an object, a name that is not a host name, a missing or non-Boolean
    ///   `sslPinningRequired`. The whole update is then refused (the body is signed, so a bad
    ///   member is a server bug, never something to guess around).
    init?(challengeBody body: Data) throws(PinStoreError) {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: body)
        } catch {
            throw PinStoreError(.invalidListData, "The list's domainsConfig is malformed: \(error). "
                + "It must be {\"sslPinningRequiredForUnlisted\": Bool, \"domains\": [{\"name\": String, \"sslPinningRequired\": Bool}]}.")
        }
        guard let config = wire.domainsConfig else { return nil }
        var domains: [String: Bool] = [:]
        for (index, domain) in (config.domains ?? []).enumerated() {
            guard let name = try? HostName(domain.name).text else {
                throw PinStoreError(.invalidListData, "domainsConfig.domains[\(index)]: \(String(reflecting: domain.name)) is not a host name.")
            }
            domains[name] = (domains[name] ?? false) || domain.sslPinningRequired
        }
        self.pinningRequiredForUnlisted = config.sslPinningRequiredForUnlisted ?? true
        self.domains = domains
    }

    private struct Wire: Decodable {
        struct Config: Decodable {
            struct Domain: Decodable {
                let name: String
                let sslPinningRequired: Bool
            }
            let sslPinningRequiredForUnlisted: Bool?
            let domains: [Domain]?
        }
        let domainsConfig: Config?
    }
}
