import Foundation

/// Pins configured in code, beside (or instead of) the signed list: Apple's `NSPinnedDomains`
/// entry, Android's `domain-config` with its `pin-set`, TrustKit's and OkHttp's pins.
///
/// ```swift
/// let configuration = PinStore.Configuration(
///     serviceURL: listURL, publicKey: listKey,
///     policies: [
///         PinPolicy(domain: "api.example.com", includesSubdomains: true, pins: [
///             .leafKey(spkiSHA256Base64: currentKey), .leafKey(spkiSHA256Base64: backupKey),
///         ]),
///         PinPolicy(domain: "**.cdn.example.com", pins: [
///             .caKey(spkiSHA256Base64: issuingCAKey), .caKey(spkiSHA256Base64: backupCAKey),
///         ], expiration: Date(timeIntervalSince1970: 1_830_297_600)),
///     ],
///     deniedPublicKeys: [knownInterceptionProductKey])
/// ```
///
/// **Which policy applies to a host.** The most specific unexpired policy whose domain matches
/// it supplies the pins, as Apple, Android and TrustKit choose: the host's own name first
/// (`api.example.com`, or a domain with subdomains on that very name), then `*.` one label
/// below, then any depth below (`**.` or ``includesSubdomains``), the longest domain first. A
/// broad parent policy's pins therefore never admit a chain for a host that has a policy of its
/// own. Specificity narrows the pins, never enforcement: when any matching unexpired policy
/// enforces, a failure is refused even if the selected one is ``reportOnly``. Two policies that
/// would be equally specific for some host (the same domain twice, `example.com` and
/// `example.com` with subdomains, `example.com` with subdomains and `**.example.com`) are
/// refused when the store is made: merge their pins. (OkHttp differs: it unions every matching
/// pattern.)
///
/// **How the policies combine with the signed list.** Union: the chain is allowed when the
/// list's pins for the host or the selected policy's pins match (deny pins are checked before,
/// and win). Both come from the team: the list rotates without a release, the policies survive
/// a list the store cannot download, and each is the other's backup during a rotation.
///
/// **Expiry.** An expired policy no longer admits anything, and it keeps its place: its hosts
/// get no policy pins, not those of a broader policy (which would widen trust the day the
/// narrow pins lapse). The store fails closed: a host the list does not pin is then refused as
/// unpinned (`noPinsForHost`), as a host whose list pins expired is, so a clock moved forward
/// cannot open a host. (Android and TrustKit differ here: an expired pin-set lets the host through on
/// the normal trust evaluation alone.) A warning is logged when the store is made and the
/// `pinstore_expired_policies` gauge is set.
///
/// The store refuses a policy with fewer than two distinct pins (a backup pin, as TrustKit and
/// RFC 7469 require: with one pin, the next key change locks every client out).
public struct PinPolicy: Sendable, Hashable {
    /// `api.example.com`, `*.example.com` (exactly one label below `example.com`),
    /// `**.example.com` (`example.com` itself and every name below it, OkHttp's rule), or an IP
    /// address (itself only). See ``includesSubdomains``.
    public var domain: String
    /// Whether the policy also covers every subdomain of ``domain``, at any depth (Android's
    /// `includeSubdomains`; the same as writing `**.` before the domain). Apple's
    /// `NSIncludesSubdomains` reaches only one label down: write it as two policies,
    /// `example.com` and `*.example.com`, as ``PinPolicyImport/infoPlist(_:)`` does.
    public var includesSubdomains: Bool
    /// The pins; at least two distinct ones.
    public var pins: [PinIdentity]
    /// When the policy stops applying (a host nothing else pins is then refused); nil (the
    /// default) for never.
    public var expiration: Date?
    /// Apple's rule for a domain listing both `NSPinnedLeafIdentities` and `NSPinnedCAIdentities`:
    /// the chain must match a leaf pin **and** a CA pin (one of each kind the policy has), not
    /// just any one pin. Default false (one matching pin is enough). The policy as a whole still
    /// combines with the list by the one rule (either admits the chain).
    public var requiresMatchInEachCategory: Bool
    /// Report-only (audit) mode for this policy (TrustKit's `enforcePinning = NO`): when the
    /// policy is the only thing pinning a host and its pins fail, the connection goes on and the
    /// failure is reported (``PinningDecision/reportOnly(_:validatedChain:)``). An enforcing
    /// list entry or an enforcing broader policy for the same host still refuses. Default false.
    public var reportOnly: Bool = false

    /// Creates a policy.
    public init(domain: String, includesSubdomains: Bool = false, pins: [PinIdentity], expiration: Date? = nil,
                requiresMatchInEachCategory: Bool = false) {
        self.domain = domain
        self.includesSubdomains = includesSubdomains
        self.pins = pins
        self.expiration = expiration
        self.requiresMatchInEachCategory = requiresMatchInEachCategory
    }
}

extension PinPolicy {
    /// Checks the policy as ``PinStore/init(configuration:logger:)`` will (domain pattern,
    /// digests, backup pin), for tools that show a configuration before it is used.
    public func check() throws(PinStoreError) {
        _ = try CompiledPolicy(self)
    }
}

/// A ``PinPolicy`` checked once, when the store is made.
struct CompiledPolicy: Sendable {
    let policy: PinPolicy
    let pattern: HostPattern
    let identities: [CompiledIdentity]
    /// Unix seconds after which the policy no longer applies; `.max` for never.
    let expires: Int64

    init(_ policy: PinPolicy) throws(PinStoreError) {
        pattern = try HostPattern(domain: policy.domain, includesSubdomains: policy.includesSubdomains)
        var identities: [CompiledIdentity] = []
        for identity in policy.pins {
            identities.append(try CompiledIdentity(identity, policy: policy.domain))
        }
        // Distinct by what they match: the same digest under two kinds is one key or one
        // certificate, not a backup.
        let distinct = Set(identities.map(\.digest))
        guard distinct.count >= 2 else {
            throw PinStoreError(.invalidConfiguration, "policy \(policy.domain): \(distinct.count) distinct pin(s); a policy needs at least two, "
                + "a backup pin (a key not yet deployed, or a second CA), so that one key change cannot lock every client out.")
        }
        self.policy = policy
        self.identities = identities
        // Int64(_:) traps on NaN, infinity and out-of-range values: a far or absurd date is "never".
        self.expires = policy.expiration.flatMap { Int64(exactly: $0.timeIntervalSince1970.rounded(.down)) } ?? .max
    }

    /// Whether the policy admits the chain: one matching pin, or with
    /// ``PinPolicy/requiresMatchInEachCategory`` one per category (leaf pins, pins above the leaf).
    /// Whether the policy's pins admit the chain (nil: the evidence cannot tell, a leaf alone
    /// against a pin above it). With ``PinPolicy/requiresMatchInEachCategory``, a leaf pin and a
    /// pin above the leaf must both match; a pin that could match anywhere counts above the
    /// leaf only there, so the leaf cannot satisfy both categories alone.
    func admits(_ evidence: ChainEvidence) -> Bool? {
        guard policy.requiresMatchInEachCategory else {
            return anyProved(identities.lazy.map { evidence.matches($0.identity.kind, digest: $0.digest) })
        }
        let leaf = identities.filter(\.isLeafPin)
        let above = identities.filter { !$0.isLeafPin }
        let leafMet = leaf.isEmpty ? true : anyProved(leaf.lazy.map { evidence.matches($0.identity.kind, digest: $0.digest) })
        let aboveMet = above.isEmpty ? true : anyProved(above.lazy.map { evidence.matchesAboveLeaf($0.identity.kind, digest: $0.digest) })
        if leafMet == false || aboveMet == false { return false }
        return leafMet == true && aboveMet == true ? true : nil
    }
}

/// The pins a store holds besides the signed list: static policies and deny pins, compiled.
struct StaticPins: Sendable {
    let policies: [CompiledPolicy]
    /// SPKI SHA-256 digests refused for every host, whatever else matches.
    let denied: [Digest32]
    /// Whether there is nothing here (then the store decides exactly as before policies existed).
    let isEmpty: Bool

    static let none = StaticPins(policies: [], denied: [])

    init(policies: [CompiledPolicy], denied: [Digest32]) {
        self.policies = policies
        self.denied = denied
        self.isEmpty = policies.isEmpty && denied.isEmpty
    }

    init(configuration: PinStore.Configuration) throws(PinStoreError) {
        var policies: [CompiledPolicy] = []
        for policy in configuration.policies {
            let compiled = try CompiledPolicy(policy)
            if let other = policies.first(where: { $0.pattern.conflicts(with: compiled.pattern) }) {
                throw PinStoreError(.invalidConfiguration, "policies \(String(reflecting: other.policy.domain))"
                    + "\(other.policy.includesSubdomains ? " (with subdomains)" : "") and \(String(reflecting: policy.domain))"
                    + "\(policy.includesSubdomains ? " (with subdomains)" : "") both name the same hosts at the same "
                    + "specificity, so which one's pins apply would be ambiguous; merge their pins into one policy.")
            }
            policies.append(compiled)
        }
        var denied: [Digest32] = []
        for text in configuration.deniedPublicKeys {
            guard let data = Base64.decodeStrict(text), let digest = Digest32(data) else {
                throw PinStoreError(.invalidConfiguration, "deniedPublicKeys: \(String(reflecting: text)) is not Base64 of a 32-byte SPKI SHA-256 digest.")
            }
            denied.append(digest)
        }
        self.init(policies: policies, denied: denied)
    }

    /// The deny rule: the depth of the first certificate whose key is denied, or nil ("meets").
    func deniedDepth(in chain: ValidatedChain) -> Int? {
        guard !denied.isEmpty else { return nil }
        for (depth, key) in chain.keys.enumerated() where denied.contains(where: { $0.constantTimeEquals(key) }) {
            return depth
        }
        return nil
    }

    /// The static policies' say for `host` at `now`: the pins of the most specific policy whose
    /// domain matches (Apple's, Android's and TrustKit's rule), and whether any matching
    /// unexpired policy enforces. Specificity narrows the pins, never enforcement: a
    /// report-only policy for a host does not switch off an enforcing one for its parent
    /// domain. When the most specific policy has expired, its hosts get no policy pins at all
    /// (fail closed), not a broader policy's: the team pinned them more narrowly on purpose.
    /// Nil when no policy matches.
    func selection(for host: String, now: Int64) -> PolicySelection? {
        guard let best = mostSpecificPolicy(for: host) else { return nil }
        let enforcing = policies.contains { now < $0.expires && !$0.policy.reportOnly && $0.pattern.matches(host) }
        return PolicySelection(policy: now < best.expires ? best : nil, enforcing: enforcing)
    }

    /// The most specific policy whose domain matches `host`, expired or not (two equally
    /// specific ones are refused when the store is made, so there is one).
    func mostSpecificPolicy(for host: String) -> CompiledPolicy? {
        var best: (policy: CompiledPolicy, specificity: HostPattern.Specificity)?
        for policy in policies where policy.pattern.matches(host) {
            let specificity = policy.pattern.specificity(for: host)
            if best.map({ specificity > $0.specificity }) ?? true { best = (policy, specificity) }
        }
        return best?.policy
    }

    /// Policies expired at `now`, for the start-up warning and the gauge.
    func expiredPolicies(at now: Int64) -> [PinPolicy] {
        policies.filter { now >= $0.expires }.map(\.policy)
    }
}

/// The policy whose pins apply to a host (nil when the most specific one has expired: no
/// policy pins), and whether a failure enforces (``StaticPins/selection(for:now:)``).
struct PolicySelection: Sendable {
    let policy: CompiledPolicy?
    let enforcing: Bool
}
