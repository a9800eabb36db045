import Foundation

/// The `crl` section of the team's signed list: the CRL mode (``CRLCheckMode``) per host or
/// pattern, read like the `certificateTransparency` section's hosts.
///
/// ```json
/// "crl": {"hosts": [{"name": "api.partner.example", "mode": "enforceSoftFail"}, {"name": "*.pay.example", "mode": "enforceHardFail"}]}
/// ```
///
/// Honoured only where a signature covers it (the whole-list signature of a static list, the
/// response signature in challenge mode): whoever answers an unsigned list request could
/// otherwise turn the check off. An unknown mode, a host named twice or an unknown member
/// refuses the whole list.
package struct CRLHostList: Sendable {
    /// The per-host modes, as written.
    let hosts: [(pattern: HostPattern, mode: CRLCheckMode)]

    /// The mode the list gives `host` (a lookup key): the most specific pattern that matches,
    /// nil when none does.
    func mode(for host: String) -> CRLCheckMode? {
        var best: (HostPattern.Specificity, CRLCheckMode)?
        for (pattern, mode) in hosts where pattern.matches(host) {
            let specificity = pattern.specificity(for: host)
            if best == nil || best!.0 < specificity { best = (specificity, mode) }
        }
        return best?.1
    }

    /// Reads the section. Throws ``PinStoreError/Code/invalidListData`` saying what is wrong.
    init(_ wire: Wire) throws(PinStoreError) {
        func refuse(_ why: String) -> PinStoreError { PinStoreError(.invalidListData, "crl: \(why)") }
        hosts = try wire.hosts.modes(CRLCheckMode.init(rawValue:), allowed: CRLCheckMode.expected(for:), refuse: refuse)
    }

    /// Reads a section file (`{"hosts": [...]}`, as a list carries it) and checks it as a store
    /// would; what a signer (the publisher) calls before it puts the section in a list.
    package static func checkedSection(_ data: Data) throws(PinStoreError) -> Wire {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: data)
        } catch {
            throw PinStoreError(.invalidListData, "crl: not a crl section ({\"hosts\": [{\"name\": ..., \"mode\": ...}]}): \(error).")
        }
        _ = try CRLHostList(wire)
        return wire
    }

    /// The section as JSON: `hosts` only (an unknown member is refused: a default mode written
    /// beside the hosts would otherwise be read by nobody). Host entries are the CT section's
    /// (`name` and `mode` only, an unknown member refused).
    package struct Wire: Codable, Sendable, Hashable {
        package let hosts: [CTLogList.Wire.Host]

        package init(hosts: [CTLogList.Wire.Host]) {
            self.hosts = hosts
        }

        private enum CodingKeys: String, CodingKey { case hosts }

        package init(from decoder: any Decoder) throws {
            try StrictMembers.refuseUnknown(in: decoder, known: ["hosts"], "a crl section has only \"hosts\"")
            hosts = try decoder.container(keyedBy: CodingKeys.self).decode([CTLogList.Wire.Host].self, forKey: .hosts)
        }
    }
}
