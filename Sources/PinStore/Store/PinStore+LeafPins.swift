import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The pin check for adapters that see only the server's leaf certificate, and not the host
// name the connection was made for (AsyncHTTPClient's connection initializers).
//
// The rule, and why it is sound. The adapter runs after the platform's default verification,
// which already proved the chain and that the leaf is valid for the requested host H: H is
// matched by one of the leaf's names (SAN DNS names and IP addresses, or its CN when it has
// none). Call a pinned name P "covered" by the leaf when some host could be matched both by a
// leaf name and by P's lookup (P itself, or for `*.S` any host whose parent is S). Then:
//
// 1. with `expectedCommonNames` set, every name of the leaf must be expected (a wildcard leaf
//    name could serve hosts beyond the list, so it is refused);
// 2. every covered pinned name must have an unexpired leaf pin (`depth` 0) equal to the leaf's
//    SHA-256; a covered name whose pins match nothing is a pin mismatch, and one with issuer
//    pins and no matching leaf pin cannot be proved from the leaf (`issuerPinsNeedChain`);
// 3. if the leaf covers no pinned name, the host has no pins.
//
// If H has pins, the pinned name that gives them is covered (it matches H, and H matches a leaf
// name), so rule 2 checks the leaf against them: no pinned host is reached with an unpinned
// leaf. The cost is that a leaf valid for several names must be pinned under all of those that
// the list pins, where the chain-aware adapters only look at the requested one.
extension PinStore {
    /// The pin decision for a connection known only by its leaf certificate (DER), already
    /// accepted by the platform's default verification for the requested host. Never updates;
    /// starts a scheduled background update when one is due, as ``validate(commonName:fingerprint:)``.
    ///
    /// An allowed decision carries `[leaf]` as its chain: the rest of the chain is not known.
    /// `host` names the decision for reports: the pinned name that failed, or the leaf's first name.
    package func leafDecision(leafCertificate der: Data) -> (decision: PinningDecision, host: String) {
        let (decision, primary) = leafPinDecision(der)
        return (decision, (decision.failure ?? decision.reportedFailure)?.host ?? primary)
    }

    /// The decision, and the leaf's first name.
    private func leafPinDecision(_ der: Data) -> (PinningDecision, String) {
        let leaf: X509Certificate
        do {
            leaf = try X509Certificate(derRepresentation: der)
        } catch {
            return (.deny(PinningFailure(host: "?", reason: .chainNotTrusted(
                ChainValidationError(.malformedCertificate, depth: 0, detail: "The verified leaf could not be read back: \(error)")))), "?")
        }
        let names = LeafNames(leaf)
        guard let primary = names.all.first else {
            // Default verification accepted a leaf without a single name: refuse rather than pin nothing.
            return (.deny(PinningFailure(host: "?", reason: .chainNotTrusted(
                ChainValidationError(.hostnameMismatch, depth: 0, detail: "The leaf has no DNS name, IP address or common name.")))), "?")
        }
        if let expectedNames {
            for name in names.all where !expectedNames.contains(name) {
                return (.deny(PinningFailure(host: name, reason: .hostNotExpected)), primary)
            }
        }

        let (stored, due) = state.withLock { ($0.stored?.index, $0.schedule.dueDate) }
        let date = clock.now()
        if date >= due { startScheduledUpdateIfDue(at: date) }
        guard let fingerprint = Digest32(leaf.fingerprint) else {
            return (.deny(PinningFailure(host: primary, reason: .pinMismatch)), primary)
        }
        let now = Int64(date.timeIntervalSince1970.rounded(.down))

        // Static policies and deny pins (Policies/): the leaf's key is the only one seen here.
        let leafKey = Digest32(SHA256Digest.hash(leaf.subjectPublicKeyInfo))
        if !staticPins.denied.isEmpty {
            guard let leafKey, !staticPins.denied.contains(where: { $0.constantTimeEquals(leafKey) }) else {
                return (.deny(PinningFailure(host: primary, reason: .deniedKey(depth: 0))), primary)
            }
            // The keys above the leaf cannot be checked against the deny pins: refuse, never pass.
            return (.deny(PinningFailure(host: primary, reason: .issuerPinsNeedChain,
                                         details: "  Deny pins are configured (deniedPublicKeys), and the keys above the leaf cannot be seen here.")), primary)
        }

        var coveredAny = false
        var issuerOnly: String?
        // Report-only: the first failure whose pins all run report-only; it becomes the decision
        // only when no enforced failure is found for another covered name.
        var reported: PinningFailure?
        // Downloaded and fallback pins together, and the static policies: a name's pins are
        // those of every source (a policy on an exact name or address joins that name's entry).
        // `enforcing`: whether any source of the name's pins enforces (report-only mode).
        var covered: [(name: String, pins: [PinIndex.Pin], policyPins: [CompiledIdentity], needsChain: Bool, enforcing: Bool)] = []
        var position: [String: Int] = [:]
        func add(_ name: String, pins: [PinIndex.Pin], policyPins: [CompiledIdentity], needsChain: Bool = false, enforcing: Bool) {
            if let at = position[name] {
                covered[at].pins += pins
                covered[at].policyPins += policyPins
                covered[at].needsChain = covered[at].needsChain || needsChain
                covered[at].enforcing = covered[at].enforcing || enforcing
            } else {
                position[name] = covered.count
                covered.append((name, pins, policyPins, needsChain, enforcing))
            }
        }
        for index in [stored, fallbackIndex].compactMap({ $0 }) {
            for (name, pins) in index.pinnedNames(coveredBy: names) {
                // Expired list pins are skipped below; only live ones make the name enforcing.
                add(name, pins: pins, policyPins: [], enforcing: listPinsEnforced && pins.contains { now < $0.expires })
            }
        }
        for policy in staticPins.policies where names.all.contains(where: { policy.pattern.mayMatch(leafName: $0) }) {
            guard now < policy.expires else { continue }
            let name = policy.pattern.kind == .exact || policy.pattern.kind == .address ? policy.pattern.base : HostName.normalized(policy.policy.domain)
            add(name, pins: [], policyPins: policy.identities, needsChain: policy.needsChainForEveryMatch, enforcing: !policy.policy.reportOnly)
        }
        for (name, pins, policyPins, needsChain, enforcing) in covered {
            var hasLeafPin = false
            var hasIssuerPin = false
            var matched = false
            for pin in pins where now < pin.expires {
                if pin.depth == PinIndex.keyDepthBase {
                    // A list key pin on the leaf.
                    hasLeafPin = true
                    if let leafKey, pin.fingerprint.constantTimeEquals(leafKey) { matched = true }
                } else if pin.depth == 0 {
                    hasLeafPin = true
                    // Every pin is compared, matched or not: the time does not depend on which one matches.
                    if pin.fingerprint.constantTimeEquals(fingerprint) { matched = true }
                } else {
                    hasIssuerPin = true
                }
            }
            for identity in policyPins {
                // A policy that needs a CA match as well as a leaf match cannot be proved here.
                switch needsChain ? nil : leafKey.flatMap({ identity.matchesLeaf(fingerprint: fingerprint, key: $0) }) {
                case true?: hasLeafPin = true; matched = true
                case false?: hasLeafPin = true
                case nil: hasIssuerPin = true   // a CA key, or a pin above the leaf: needs the chain
                }
            }
            guard hasLeafPin || hasIssuerPin else { continue }   // only expired pins: not pinned
            coveredAny = true
            if matched { continue }
            let failure = PinningFailure(host: name, reason: hasLeafPin && !hasIssuerPin ? .pinMismatch : .issuerPinsNeedChain)
            guard case .deny = pinFailureDecision(failure, enforcing: enforcing, validatedChain: [der]) else {
                reported = reported ?? failure
                continue
            }
            if hasLeafPin && !hasIssuerPin {
                return (.deny(failure), primary)
            }
            issuerOnly = issuerOnly ?? name
        }
        if let issuerOnly {
            return (.deny(PinningFailure(host: issuerOnly, reason: .issuerPinsNeedChain)), primary)
        }
        if let reported {
            return (.reportOnly(reported, validatedChain: [der]), primary)
        }
        // Expired policies no longer apply: a leaf only they cover is unpinned (refused), as on
        // the chain-aware adapters; unless the signed challenge-mode list says that every host
        // the leaf can serve needs no pins (DomainsConfig), or hosts without pins run report-only.
        guard coveredAny else {
            if serverRequiresNoPins(forLeafNames: names.all) {
                return (.allow(validatedChain: [der]), primary)
            }
            return (pinFailureDecision(PinningFailure(host: primary, reason: .noPinsForHost(updateResult: nil)),
                                       enforcing: listPinsEnforced, validatedChain: [der]), primary)
        }
        return (.allow(validatedChain: [der]), primary)
    }

    /// ``leafDecision(leafCertificate:)``, and when it is a pin mismatch (with
    /// `updateOnMismatch`) or a host without pins (with `updateOnEmpty`), one rate-limited
    /// update (``updateAfterRefusal()``) and a second decision.
    package func leafDecision(leafCertificate der: Data, updateOnEmpty: Bool, updateOnMismatch: Bool) async -> (decision: PinningDecision, host: String) {
        let first = leafDecision(leafCertificate: der)
        guard Self.refusalWorthAnUpdate(first.decision, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch) else { return first }
        return await leafDecisionAfterUpdate(leafCertificate: der)
    }

    /// Whether `decision` is a refusal that an update of the list could turn around (the rule
    /// every adapter follows: ``PinningEvaluator``'s).
    package static func refusalWorthAnUpdate(_ decision: PinningDecision, updateOnEmpty: Bool, updateOnMismatch: Bool) -> Bool {
        PinningEvaluator.wantsUpdate(after: decision, updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch)
    }

    /// One ``updateAfterRefusal()``, then ``leafDecision(leafCertificate:)`` again.
    package func leafDecisionAfterUpdate(leafCertificate der: Data) async -> (decision: PinningDecision, host: String) {
        // As PinningEvaluator's: look again before downloading; the list may have just changed.
        let generation = listGeneration
        let recheck = leafDecision(leafCertificate: der)
        if case .allow = recheck.decision { return recheck }
        let updateResult = await updateAfterRefusal(decidedUnder: generation)
        let second = leafDecision(leafCertificate: der)
        switch second.decision {
        case .deny(let failure) where failure.reason.isNoPinsForHost:
            return (.deny(PinningFailure(host: failure.host, reason: .noPinsForHost(updateResult: updateResult))), second.host)
        case .reportOnly(let failure, let chain) where failure.reason.isNoPinsForHost:
            return (.reportOnly(PinningFailure(host: failure.host, reason: .noPinsForHost(updateResult: updateResult)), validatedChain: chain), second.host)
        default:
            return second
        }
    }
}

/// The names a leaf may be valid for, normalized as the index's names are: what the default
/// host-name check matches a requested host against (SAN DNS names and IP addresses; the CN
/// when there are neither, as swift-nio-ssl falls back to it).
struct LeafNames {
    /// Every name, DNS names first, in certificate order.
    let all: [String]
    /// IP addresses in canonical text form.
    let addresses: [String]

    init(_ leaf: X509Certificate) {
        let addresses = leaf.ipAddresses.map(IPAddressText.canonical)
        var dns = leaf.dnsNames.map(HostName.normalized)
        if dns.isEmpty, addresses.isEmpty, let commonName = leaf.commonName {
            dns = [HostName.normalized(commonName)]
        }
        self.all = dns + addresses
        self.addresses = addresses
    }
}

extension PinIndex {
    /// The pinned names (with their pins) that a connection accepted for some host with this
    /// leaf could be looked up under. Over-approximates on purpose: a name too many means one
    /// more pin check, a name too few would let a pinned host through unpinned.
    func pinnedNames(coveredBy leaf: LeafNames) -> [(name: String, pins: [Pin])] {
        var result: [(name: String, pins: [Pin])] = []
        var seen: Set<String> = []
        func add(_ name: String, _ pins: [Pin]) {
            if seen.insert(name).inserted { result.append((name, pins)) }
        }
        for name in leaf.all {
            let (firstLabel, parent) = Self.split(name)
            if firstLabel.contains("*") {
                // A wildcard leaf name serves any host of one label under `parent` that fits the
                // label's pattern: every exact pinned name like that is covered.
                for (pinned, pins) in exact.names where Self.split(pinned).parent == parent
                    && Self.wildcardLabel(firstLabel, matches: Self.split(pinned).firstLabel) {
                    add(pinned, Array(pins))
                }
            } else if let pins = exact[name] {
                add(name, Array(pins))
            }
            // `*.parent` pins apply to every host whose parent is `parent`, which this leaf name
            // (exact or wildcard) can serve. IP addresses too: the index does not tell them apart.
            if let parent, let pins = wildcard[parent] {
                add("*." + parent, Array(pins))
            }
        }
        // Pinned IP addresses written in another text form than the certificate's.
        if !leaf.addresses.isEmpty {
            for (pinned, pins) in exact.names where !seen.contains(pinned) && pinned.contains(":") {
                if leaf.addresses.contains(IPAddressText.canonical(pinned)) { add(pinned, Array(pins)) }
            }
        }
        return result
    }

    /// "a.b.c" -> ("a", "b.c"); "localhost" -> ("localhost", nil).
    private static func split(_ name: String) -> (firstLabel: Substring, parent: String?) {
        guard let dot = name.firstIndex(of: ".") else { return (name[...], nil) }
        let parent = String(name[name.index(after: dot)...])
        return (name[..<dot], parent.isEmpty ? nil : parent)
    }

    /// Whether a wildcard label (`*`, `f*`, `*z`, `f*z`: one asterisk) matches `label`. The
    /// asterisk is allowed to match nothing here, one case more than swift-nio-ssl allows.
    private static func wildcardLabel(_ pattern: Substring, matches label: Substring) -> Bool {
        guard let star = pattern.firstIndex(of: "*") else { return pattern == label }
        let prefix = pattern[..<star]
        let suffix = pattern[pattern.index(after: star)...]
        return label.count >= prefix.count + suffix.count && label.hasPrefix(prefix) && label.hasSuffix(suffix)
    }
}

/// IP address text in one canonical form (inet_ntop's), so `::1` and `0:0::1` compare equal.
enum IPAddressText {
    static func canonical(_ text: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return format(AF_INET, &v4)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return format(AF_INET6, &v6)
        }
        return text
    }

    private static func format(_ family: Int32, _ address: UnsafeRawPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
