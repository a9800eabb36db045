import Foundation

/// The configured ``TransportSecurityException``s, checked once when the store is made, and the
/// answer to "which transport minimums hold for this host".
package struct TransportSecurityExceptionTable: Sendable {
    private struct Entry: Sendable {
        let pattern: HostPattern
        let requirements: TransportSecurityRequirements
    }

    /// Most specific first (longest domain): the first entry that matches a host decides.
    private let entries: [Entry]

    /// No exception: ATS's defaults for every host.
    package static let none = TransportSecurityExceptionTable(entries: [])

    /// The exceptions' domains (without `*.`), for the leaf view's hosts behind a wildcard.
    package var domains: [String] { entries.map(\.pattern.base) }

    /// Whether some exception enforces Certificate Transparency (`NSRequiresCertificateTransparency`).
    package var requiresCertificateTransparencyAnywhere: Bool {
        entries.contains { $0.requirements.requiresCertificateTransparency }
    }

    private init(entries: [Entry]) {
        self.entries = entries
    }

    /// Checks the exceptions: a host name or IP address each (no wildcard: write the parent
    /// domain with `includesSubdomains`), no domain twice.
    package init(_ exceptions: [TransportSecurityException]) throws(PinStoreError) {
        var entries: [Entry] = []
        var seen: Set<String> = []
        for exception in exceptions {
            func refuse(_ why: String) -> PinStoreError {
                PinStoreError(.invalidConfiguration, "transportSecurityExceptions: \(String(reflecting: exception.domain)): \(why).")
            }
            guard !exception.domain.contains("*") else {
                throw refuse("wildcards are not accepted (ATS has none); use the parent domain with includesSubdomains")
            }
            let pattern: HostPattern
            do {
                // ATS's NSIncludesSubdomains reaches one label below the domain (Apple's example:
                // example.com covers math.example.com, not advanced.math.example.com).
                pattern = try HostPattern(domain: exception.domain, subdomains: exception.includesSubdomains ? .oneLabel : .none)
            } catch {
                throw refuse(error.reason)
            }
            guard seen.insert(pattern.base).inserted else {
                throw refuse("the domain has two exceptions; merge them into one")
            }
            entries.append(Entry(pattern: pattern, requirements: TransportSecurityRequirements(exception)))
        }
        // A longer base is a more specific domain: `a.example.com` before `example.com`.
        self.entries = entries.sorted { $0.pattern.base.utf8.count > $1.pattern.base.utf8.count }
    }

    /// The minimums for a connection to `host` (the name or address the client connected to).
    package func requirements(for host: String) -> TransportSecurityRequirements {
        guard !entries.isEmpty, let key = (try? HostName(host))?.text else { return .ats }
        return entries.first { $0.pattern.matches(key) }?.requirements ?? .ats
    }

    /// The minimums for a connection known only by its leaf certificate's names (the adapter
    /// does not see the host it was opened for): the strictest over every host those names
    /// cover, so an exception is applied only when every such host has it. A leaf without names
    /// gets ATS's defaults.
    package func requirements(forLeafDNSNames dnsNames: [String], ipAddresses: [String]) -> TransportSecurityRequirements {
        guard !entries.isEmpty, !(dnsNames.isEmpty && ipAddresses.isEmpty) else { return .ats }
        var result: TransportSecurityRequirements?
        func add(_ requirements: TransportSecurityRequirements) {
            result = result.map { $0.union(requirements) } ?? requirements
        }
        for address in ipAddresses { add(requirements(for: address)) }
        for name in dnsNames {
            guard let key = (try? HostName(name))?.text else { return .ats }
            guard key.hasPrefix("*.") else {
                add(requirements(for: key))
                continue
            }
            // `*.parent`: any one label under parent. The entry covering all of them (a parent
            // domain with subdomains), then every entry for one such host (which can only be as
            // strict or stricter for that host, never looser for the others).
            let parent = String(key.dropFirst(2))
            let covering = entries.first { $0.pattern.coversEveryLabel(below: parent) }
            add(covering?.requirements ?? .ats)
            for entry in entries where entry.pattern.mayMatch(leafName: key) { add(entry.requirements) }
        }
        return result ?? .ats
    }

    /// The lowest TLS version any host may use: the floor of a TLS configuration shared by
    /// every host (AsyncHTTPClient's), which then checks each connection's version itself.
    package var lowestMinimumTLSVersion: TLSProtocolVersion {
        entries.map(\.requirements.minimumTLSVersion).min().map { min($0, TransportSecurityRequirements.ats.minimumTLSVersion) }
            ?? TransportSecurityRequirements.ats.minimumTLSVersion
    }
}
