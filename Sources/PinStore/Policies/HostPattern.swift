import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which host names a ``PinPolicy`` (or a ``TransportSecurityException``) applies to. Names
/// compare ASCII case-insensitively and without a trailing dot; an IP address matches only
/// itself (any text form of it).
///
/// | pattern | matches | does not match | as |
/// | --- | --- | --- | --- |
/// | `api.example.com` | `api.example.com` | `a.api.example.com` | |
/// | `*.example.com` | `api.example.com` | `example.com`, `a.b.example.com` | a certificate wildcard |
/// | `**.example.com` | `example.com`, `api.example.com`, `a.b.example.com` | `badexample.com` | OkHttp's `**.` |
/// | `example.com` + ``Subdomains/anyDepth`` | the same as `**.example.com` | | Android's `includeSubdomains` |
/// | `example.com` + ``Subdomains/oneLabel`` | `example.com`, `math.example.com` | `advanced.math.example.com` | Apple's `NSIncludesSubdomains` |
///
/// Where patterns overlap, the most specific one that matches a host decides for it
/// (``specificity(for:)``); two patterns that would be equally specific for some host
/// ``conflicts(with:)`` each other and are refused where they are configured.
struct HostPattern: Sendable, Hashable {
    /// How far below its domain a pattern without a wildcard reaches.
    enum Subdomains: Sendable, Hashable {
        /// The domain alone.
        case none
        /// The domain and the names one label below it (Apple's `NSIncludesSubdomains`: for
        /// `example.com`, `math.example.com` but not `advanced.math.example.com`).
        case oneLabel
        /// The domain and every name below it (Android's `includeSubdomains`, TrustKit's
        /// `kTSKIncludeSubdomains`, OkHttp's `**.`).
        case anyDepth
    }

    enum Kind: Sendable, Hashable {
        case exact
        case address
        /// `*.base`: one label below base, not base itself.
        case oneLabel
        /// base and one label below it.
        case domainAndOneLabel
        /// base and every name below it (`**.base`, or base with subdomains at any depth).
        case domainAndSubdomains
    }

    let kind: Kind
    /// The normalized name (without `*.`/`**.`), or the canonical address.
    let base: String

    /// A domain with `includesSubdomains` covering every depth (``PinPolicy``'s meaning).
    init(domain: String, includesSubdomains: Bool) throws(PinStoreError) {
        try self.init(domain: domain, subdomains: includesSubdomains ? .anyDepth : .none)
    }

    /// Parses a policy's domain. Throws for a malformed name, a wildcard or subdomains on an IP
    /// address, a wildcard inside a label, and a pattern on a public suffix alone (`*.com`,
    /// `**.co.uk`, `com` with subdomains): it would pin every site under it.
    init(domain: String, subdomains: Subdomains) throws(PinStoreError) {
        func refuse(_ why: String) -> PinStoreError {
            PinStoreError(.invalidConfiguration, "policy domain \(String(reflecting: domain)): \(why).")
        }
        let key: String
        do {
            key = try HostName(domain).text
        } catch {
            throw refuse(error.reason)
        }
        var kind: Kind
        var base: Substring
        if key.hasPrefix("**.") {
            (kind, base) = (.domainAndSubdomains, key.dropFirst(3))
        } else if key.hasPrefix("*.") {
            (kind, base) = (.oneLabel, key.dropFirst(2))
        } else {
            switch subdomains {
            case .none: kind = .exact
            case .oneLabel: kind = .domainAndOneLabel
            case .anyDepth: kind = .domainAndSubdomains
            }
            base = key[...]
        }
        guard !base.isEmpty, !base.contains("*") else {
            throw refuse("a wildcard may only be a whole first label, `*.` (one label) or `**.` (any number)")
        }
        if key.hasPrefix("*"), subdomains != .none {
            throw refuse("subdomains cannot be combined with a wildcard; use `**.` or the plain domain")
        }
        // HostName wrote an IPv6 address without brackets, in its canonical form.
        let canonical = IPAddressText.canonical(String(base))
        if IPAddressText.isAddress(String(base)) {
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
            return IPAddressText.canonical(host) == base
        case .oneLabel: return isOneLabelBelowBase(host)
        case .domainAndOneLabel: return host == base || isOneLabelBelowBase(host)
        case .domainAndSubdomains: return host == base || host.hasSuffix(dottedBase)
        }
    }

    private func isOneLabelBelowBase(_ host: String) -> Bool {
        guard let dot = host.firstIndex(of: "."), dot != host.startIndex else { return false }
        return host[host.index(after: dot)...] == base
    }

    /// How closely the pattern names `host`, a host it matches: the host itself, then one label
    /// below the pattern's domain, then any depth below it, the longest domain first. Apple,
    /// Android and TrustKit apply only the most specific entry to a host; so does the store.
    func specificity(for host: String) -> Specificity {
        switch kind {
        case .exact, .address: return Specificity(rank: 3, length: 0)
        case .oneLabel: return Specificity(rank: 2, length: 0)
        case .domainAndOneLabel: return Specificity(rank: host == base ? 3 : 2, length: 0)
        case .domainAndSubdomains: return host == base ? Specificity(rank: 3, length: 0) : Specificity(rank: 1, length: base.utf8.count)
        }
    }

    /// Orders the patterns that match one host. Two patterns that match a host with equal
    /// specificity always ``conflicts(with:)`` each other.
    struct Specificity: Comparable, Sendable {
        let rank: Int
        /// The domain's length, for any-depth patterns (a longer domain is closer to the host).
        let length: Int

        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.rank, lhs.length) < (rhs.rank, rhs.length) }
    }

    /// The names for which this pattern would be as specific as `other` while both match: the
    /// same domain itself, the same one label below a domain, or the same depth below a domain.
    /// A configuration with two such patterns is ambiguous (which one's pins apply?) and is
    /// refused, as Android refuses a domain named twice.
    func conflicts(with other: HostPattern) -> Bool {
        !claims.isDisjoint(with: other.claims)
    }

    private enum Claim: Hashable {
        case itself(String)
        case oneLabelBelow(String)
        case anyDepthBelow(String)
    }

    private var claims: Set<Claim> {
        switch kind {
        case .exact, .address: return [.itself(base)]
        case .oneLabel: return [.oneLabelBelow(base)]
        case .domainAndOneLabel: return [.itself(base), .oneLabelBelow(base)]
        case .domainAndSubdomains: return [.itself(base), .anyDepthBelow(base)]
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
        // The pattern's domain is itself one label under `parent`.
        let baseIsOneLabelBelowParent = base.hasSuffix("." + parent) && !base.dropLast(parent.count + 1).contains(".")
        switch kind {
        case .exact: return baseIsOneLabelBelowParent
        case .address: return false
        case .oneLabel: return parent == base
        case .domainAndOneLabel: return parent == base || baseIsOneLabelBelowParent
        case .domainAndSubdomains: return parent == base || parent.hasSuffix("." + base) || baseIsOneLabelBelowParent
        }
    }

    /// Whether every host one label below `parent` matches (a `*.parent` leaf is covered whole).
    func coversEveryLabel(below parent: String) -> Bool {
        switch kind {
        case .exact, .address: return false
        case .oneLabel, .domainAndOneLabel: return parent == base
        case .domainAndSubdomains: return parent == base || parent.hasSuffix(dottedBase)
        }
    }

    /// Whether the pattern covers names below its domain (for reports' `include-subdomains`).
    var coversSubdomains: Bool { kind == .domainAndOneLabel || kind == .domainAndSubdomains }
}

extension IPAddressText {
    /// Whether `text` is an IPv4 or IPv6 address literal.
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
