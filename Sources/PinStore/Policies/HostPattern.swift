import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which host names a ``PinPolicy`` applies to. Names compare ASCII case-insensitively and
/// without a trailing dot; an IP address matches only itself (any text form of it).
///
/// | policy domain | `includesSubdomains` | matches | does not match |
/// | --- | --- | --- | --- |
/// | `api.example.com` | false | `api.example.com` | `a.api.example.com` |
/// | `*.example.com` | - | `api.example.com` | `example.com`, `a.b.example.com` |
/// | `**.example.com` | - | `api.example.com`, `a.b.example.com` | `example.com` |
/// | `example.com` | true | `example.com`, `api.example.com`, `a.b.example.com` | `badexample.com` |
///
/// `*.` is exactly one label (as certificate wildcards); `**.` is one label or more (OkHttp's
/// rule: `**.example.com` does not match `example.com` itself). `includesSubdomains` follows
/// Apple's `NSIncludesSubdomains` and Android's `includeSubdomains`, which agree on what a
/// domain covers (itself and every subdomain at any depth). Where they differ is overlap:
/// Android applies only the most specific `domain-config`, while PinStore applies every policy
/// that matches, together with the signed list (the store's one rule: a chain is allowed when
/// at least one pin that applies to the host matches it).
struct HostPattern: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case exact
        case oneLabel
        case anyLabels
        case domainAndSubdomains
        case address
    }

    let kind: Kind
    /// The normalized name (without `*.`/`**.`), or the canonical address.
    let base: String

    /// Parses a policy's domain. Throws for a malformed name, a wildcard or `includesSubdomains`
    /// on an IP address, a wildcard inside a label, and a pattern on a public suffix alone
    /// (`*.com`, `**.co.uk`, `com` with subdomains): it would pin every site under it.
    init(domain: String, includesSubdomains: Bool) throws(PinStoreError) {
        func refuse(_ why: String) -> PinStoreError {
            PinStoreError(.invalidConfiguration, "policy domain \(String(reflecting: domain)): \(why).")
        }
        guard let key = HostName.lookupKey(domain) else {
            throw refuse("not a host name (empty, an empty label such as a leading dot, or a space or control character)")
        }
        guard HostName.hasHostCharacters(key) else {
            throw refuse("characters no host name has: write the host alone, without a scheme, port or path")
        }
        var kind: Kind
        var base: Substring
        if key.hasPrefix("**.") {
            (kind, base) = (.anyLabels, key.dropFirst(3))
        } else if key.hasPrefix("*.") {
            (kind, base) = (.oneLabel, key.dropFirst(2))
        } else {
            (kind, base) = (includesSubdomains ? .domainAndSubdomains : .exact, key[...])
        }
        guard !base.isEmpty, !base.contains("*") else {
            throw refuse("a wildcard may only be a whole first label, `*.` (one label) or `**.` (any number)")
        }
        if kind != .exact, kind != .domainAndSubdomains, includesSubdomains {
            throw refuse("includesSubdomains cannot be combined with a wildcard; use `**.` or the plain domain")
        }
        let bareBase = base.hasPrefix("[") && base.hasSuffix("]") ? base.dropFirst().dropLast() : base
        let canonical = IPAddressText.canonical(String(bareBase))
        if IPAddressText.isAddress(String(bareBase)) {
            guard kind == .exact else { throw refuse("an IP address matches only itself: no wildcard, no subdomains") }
            (kind, base) = (.address, canonical[...])
        } else if kind != .exact, base.split(separator: ".").last?.allSatisfy(\.isNumber) ?? true {
            // No top-level domain is numeric: such a pattern could only ever match IP addresses.
            throw refuse("an IP address matches only itself: no wildcard, no subdomains")
        } else if kind != .exact, !base.contains(".") || HostName.commonPublicSuffixes.contains(String(base)) {
            throw refuse("a pattern on the public suffix \"\(base)\" would cover every site under it")
        }
        self.kind = kind
        self.base = String(base)
        self.dottedBase = "." + base
    }

    /// `"." + base`, made once: matching then allocates nothing.
    private let dottedBase: String

    /// Whether the pattern applies to `host` (a lookup key: lowercase, no trailing dot).
    func matches(_ host: String) -> Bool {
        // An IP literal is matched exactly, never by a name pattern.
        if kind != .exact, kind != .address, IPAddressText.isAddress(host) { return false }
        switch kind {
        case .exact: return host == base
        case .address:
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            return IPAddressText.canonical(bare) == base
        case .oneLabel:
            guard let dot = host.firstIndex(of: ".") else { return false }
            return host[host.index(after: dot)...] == base && dot != host.startIndex
        case .anyLabels: return host.utf8.count > dottedBase.utf8.count && host.hasSuffix(dottedBase)
        case .domainAndSubdomains: return host == base || host.hasSuffix(dottedBase)
        }
    }

    /// Whether some host that the leaf name `name` is valid for (a lookup key, perhaps with a
    /// `*` in its first label) could match this pattern. Over-approximates on purpose: one
    /// name too many means one more pin check for the leaf-only adapter, never a pin skipped.
    func mayMatch(leafName name: String) -> Bool {
        guard let dot = name.firstIndex(of: "."), name[..<dot].contains("*") else {
            return matches(name)
        }
        let parent = String(name[name.index(after: dot)...])
        switch kind {
        case .exact: return base.hasSuffix("." + parent) && !base.dropLast(parent.count + 1).contains(".")
        case .address: return false
        case .oneLabel: return parent == base
        case .anyLabels: return parent == base || parent.hasSuffix("." + base)
        // The domain itself is one label under `parent` too (`api.example.com` with
        // subdomains, against a `*.example.com` leaf).
        case .domainAndSubdomains:
            return parent == base || parent.hasSuffix("." + base)
                || (base.hasSuffix("." + parent) && !base.dropLast(parent.count + 1).contains("."))
        }
    }
}

extension IPAddressText {
    /// Whether `text` is an IPv4 or IPv6 address literal.
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
