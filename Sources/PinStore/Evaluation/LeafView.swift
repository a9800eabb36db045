import Foundation

// The leaf view: the pin decision for adapters that see only the server's leaf certificate and
// not the host the connection was made for (AsyncHTTPClient's connection initializers).
//
// The invariant, and why it holds. The platform's default verification (swift-nio-ssl) accepted
// the leaf for the requested host H, which it does when H matches one of the leaf's DNS names
// (a `*` first label matching one label), or when the leaf has an IP-address name equal to the
// socket's peer address, whatever H is. So:
//
// - a leaf with an IP-address name equal to the peer address (or with IP-address names and an
//   unknown peer) could stand for any host at all, for which the chain-aware decision refuses
//   (most hosts fail its host-name check): the leaf view refuses it;
// - a wildcard name without a parent domain (`*`, `pay*`) matches every one-label host, and a
//   name that is not a host name cannot be decided: the leaf view refuses both;
// - otherwise H is one of the hosts the leaf's DNS names cover. Every such host is decided by
//   the same rules as the chain-aware adapters (``PinningRules``), over what the leaf alone
//   proves (``ChainEvidence/leafOnly(_:)``: a pin above the leaf is never proved), and the
//   connection goes on only if every one of them is allowed (or reported). An exact name is
//   its own host; a wildcard name covers every host one label under its parent, which fall in
//   two groups: the names some rule singles out (each rule says which, through
//   ``PinningRule/singledOutHosts(_:into:)``: list and fallback entries, policies, the
//   domainsConfig, expected names, CT hosts), each decided on its own, and every other one,
//   which no rule can tell apart (only patterns apply to them), decided through one made-up
//   label. The rules are asked, never a table kept beside them, so a new rule that treats
//   some hosts apart is honoured here without an edit.
//
// Hence: if the leaf view allows a leaf, the chain-aware decision allows that chain for every
// host the leaf could be presented for. What it costs: a leaf valid for several names must be
// allowed under all of them; a wildcard leaf needs pins (or a domainsConfig exemption, or
// report-only) for every host under it; an IP-address leaf is refused. README lists these.

/// A leaf certificate as the leaf view judges it: its digests, and the names it can serve.
struct LeafView: Sendable {
    let evidence: ChainEvidence
    /// DNS names (wildcards kept), normalized; the common name when the leaf has no
    /// subjectAltName at all.
    let names: [String]
    /// An IP-address name equal to the peer address (or any, when the peer is unknown): the
    /// leaf then stands for any requested host.
    let addressForAnyHost: String?
    /// The name reports use for an allowed connection.
    var primaryName: String { names.first ?? addressForAnyHost ?? "?" }

    init(leaf der: Data, peerAddress: String?) throws(PinningFailure) {
        let leaf: X509Certificate
        do {
            leaf = try X509Certificate(derRepresentation: der)
        } catch {
            throw PinningFailure(host: "?", reason: .chainNotTrusted(
                ChainValidationError(.malformedCertificate, depth: 0, detail: "The verified leaf could not be read back: \(error)")))
        }
        guard let fingerprint = Digest32(leaf.fingerprint), let key = Digest32(SHA256Digest.hash(leaf.subjectPublicKeyInfo)) else {
            throw PinningFailure(host: "?", reason: .chainNotTrusted(
                ChainValidationError(.malformedCertificate, depth: 0, detail: "The verified leaf's digests could not be computed.")))
        }
        evidence = .leafOnly(.init(der: der, fingerprint: fingerprint, key: key, serial: leaf.serialNumber))
        var written = leaf.dnsNames
        if leaf.dnsNames.isEmpty, leaf.ipAddresses.isEmpty, let commonName = leaf.commonName {
            written = [commonName]
        }
        var names: [String] = []
        for name in written {
            // A name we cannot read as a host (an empty label, two trailing dots) may still be
            // one swift-nio-ssl matches: refuse the leaf rather than leave a host undecided.
            guard let key = (try? HostName(name))?.text else {
                throw PinningFailure(host: name, reason: .chainNotTrusted(ChainValidationError(.hostnameMismatch, depth: 0, detail:
                    "The leaf names \(String(reflecting: name)), which is not a host name this adapter can decide for.")))
            }
            // swift-nio-ssl reads `*` and `pay*` (no parent domain) as wildcards matching any
            // host of one label: no legitimate certificate carries one.
            let (label, parent) = PinStore.split(key)
            if label.contains("*"), parent == nil {
                throw PinningFailure(host: key, reason: .chainNotTrusted(ChainValidationError(.hostnameMismatch, depth: 0, detail:
                    "The leaf names the wildcard \(String(reflecting: key)) without a parent domain, which matches every one-label host.")))
            }
            names.append(key)
        }
        self.names = names
        let addresses = leaf.ipAddresses.map(IPAddressText.canonical)
        if let peerAddress {
            let peer = IPAddressText.canonical(peerAddress)
            // An IPv4 peer reached over an IPv6 socket shows as ::ffff:a.b.c.d.
            let peerV4 = peer.hasPrefix("::ffff:") ? String(peer.dropFirst(7)) : peer
            addressForAnyHost = addresses.first { $0 == peer || $0 == peerV4 }
        } else {
            addressForAnyHost = addresses.first
        }
    }
}

extension PinStore {
    /// The leaf view's decision (not reported). See the top of this file for the rule.
    ///
    /// - Parameters:
    ///   - der: The leaf the platform's default verification accepted.
    ///   - peerAddress: The address of the socket the leaf came over (what swift-nio-ssl
    ///     compares IP-address names with); nil when unknown.
    package func leafDecision(leaf der: Data, peerAddress: String?) -> PinningDecision {
        do {
            return leafDecision(try LeafView(leaf: der, peerAddress: peerAddress))
        } catch {
            return .deny(error)
        }
    }

    /// The one step (``PinningStep``) for a leaf-only adapter: decided and reported, or the
    /// update first.
    package func leafStep(leaf der: Data, peerAddress: String?, port: Int?, updateOnEmpty: Bool, updateOnMismatch: Bool) -> PinningStep {
        let view: LeafView
        do {
            view = try LeafView(leaf: der, peerAddress: peerAddress)
        } catch {
            record(.deny(error), host: error.host, port: port, servedChain: [der], validatedChain: nil)
            return .decided(.deny(error))
        }
        return step(updateOnEmpty: updateOnEmpty, updateOnMismatch: updateOnMismatch, report: { [self] decision in
            let host = (decision.failure ?? decision.reportedFailure)?.host ?? view.primaryName
            record(decision, host: host, port: port, servedChain: [der], validatedChain: [der])
        }, decide: { [self] in
            leafDecision(view)
        })
    }

    func leafDecision(_ view: LeafView) -> PinningDecision {
        let (listInForce, now) = pinSnapshot()
        return rules.leafDecision(view, tables: PinningTables(listInForce: listInForce, fallback: fallbackIndex), now: now)
    }
}

extension PinningRules {
    /// The leaf view's decision over one snapshot of the pins in force (see the top of this
    /// file): every representative host decided by these rules; refused if one is refused,
    /// reported if one is reported.
    func leafDecision(_ view: LeafView, tables: PinningTables, now: Int64) -> PinningDecision {
        if let address = view.addressForAnyHost {
            return .deny(PinningFailure(host: address, reason: .chainNotTrusted(ChainValidationError(.hostnameMismatch, depth: 0, detail:
                "The leaf names the IP address \(address), the server's own address, which swift-nio-ssl accepts for any requested host; "
                + "AsyncHTTPClient does not tell which host was requested, so no pin can be checked for it. "
                + "Serve a certificate without that IP address, or call this host through PinStoreNIO (the pinned URLSession or PinningTLSVerifier)."))))
        }
        guard !view.names.isEmpty else {
            // Default verification accepted a leaf without a usable name: refuse rather than pin nothing.
            return .deny(PinningFailure(host: "?", reason: .chainNotTrusted(
                ChainValidationError(.hostnameMismatch, depth: 0, detail: "The leaf has no DNS name, IP address or common name this adapter can check."))))
        }
        var reported: PinningDecision?
        for (host, shownAs) in representativeHosts(of: view.names, tables: tables) {
            let connection = PinningContext(host: host, requestedName: shownAs, evidence: view.evidence, tables: tables, now: now)
            let decision = decide(connection)
            switch decision {
            case .deny: return decision
            case .reportOnly: reported = reported ?? decision
            case .allow: continue
            }
        }
        return reported ?? .allow(validatedChain: view.evidence.certificates)
    }

    /// The hosts whose decisions stand for every host the leaf's `names` can be presented for
    /// (see the top of this file), each with the name failures show: the host itself, or for
    /// the one made-up host under a wildcard, the wildcard name (`*.example.com`).
    func representativeHosts(of names: [String], tables: PinningTables) -> [(HostName, String)] {
        var hosts: [(HostName, String)] = []
        var seen: Set<String> = []
        func add(_ text: String, shownAs: String? = nil) {
            if seen.insert(text).inserted { hosts.append((HostName(normalized: text), shownAs ?? text)) }
        }
        // Every name a rule singles out, by parent, gathered the first time a wildcard asks:
        // one pass over the rules per decision, however many wildcard names the leaf has.
        var knownByParent: [String: [Substring]]?
        var known: Set<String> = []
        for name in names {
            let (label, parent) = PinStore.split(name)
            guard label.contains("*"), let parent else {
                add(name)
                continue
            }
            if knownByParent == nil {
                known = singledOutHosts(tables)
                var byParent: [String: [Substring]] = [:]
                for candidate in known {
                    let split = PinStore.split(candidate)
                    if let candidateParent = split.parent { byParent[candidateParent, default: []].append(split.firstLabel) }
                }
                knownByParent = byParent
            }
            let covered = (knownByParent?[parent] ?? []).filter { PinStore.wildcardLabel(label, matches: $0) }.map { "\($0).\(parent)" }
            for candidate in covered.sorted() { add(candidate) }
            // One host no rule singles out: the rules can only match it through patterns.
            let star = label.firstIndex(of: "*") ?? label.startIndex
            let prefix = label[..<star], suffix = label[label.index(after: star)...]
            var serial = 0
            var fresh = "\(prefix)pinstore-unnamed-host\(suffix).\(parent)"
            while seen.contains(fresh) || known.contains(fresh) {
                serial += 1
                fresh = "\(prefix)pinstore-unnamed-host-\(serial)\(suffix).\(parent)"
            }
            add(fresh, shownAs: name)
        }
        return hosts
    }
}

extension PinStore {
    /// "a.b.c" -> ("a", "b.c"); "localhost" -> ("localhost", nil).
    static func split(_ name: String) -> (firstLabel: Substring, parent: String?) {
        guard let dot = name.firstIndex(of: ".") else { return (name[...], nil) }
        let parent = String(name[name.index(after: dot)...])
        return (name[..<dot], parent.isEmpty ? nil : parent)
    }

    /// Whether a wildcard label (`*`, `f*`, `*z`, `f*z`: one asterisk) matches `label`. The
    /// asterisk may match nothing here, one case more than swift-nio-ssl allows: a host too
    /// many is one more decision, never one skipped.
    static func wildcardLabel(_ pattern: Substring, matches label: Substring) -> Bool {
        guard let star = pattern.firstIndex(of: "*") else { return pattern == label }
        let prefix = pattern[..<star]
        let suffix = pattern[pattern.index(after: star)...]
        return label.count >= prefix.count + suffix.count && label.hasPrefix(prefix) && label.hasSuffix(suffix)
    }

    /// The pins in force and the time, read once for a decision.
    func pinSnapshot() -> (listInForce: ListSnapshot, now: Int64) {
        let (listInForce, due) = state.withLock { ($0.list, $0.updateDue) }
        let date = clock.now()
        if date >= due { startScheduledUpdateIfDue(at: date) }
        return (listInForce, Int64(date.timeIntervalSince1970.rounded(.down)))
    }
}
