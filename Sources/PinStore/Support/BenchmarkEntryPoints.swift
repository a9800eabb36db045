import Foundation

/// What the benchmarks in `Benchmarks/` (a package of their own, never built by users) call to
/// time internal work that no public API exposes on its own yet. Reached only through
/// `@_spi(Benchmarks) import PinStore`; not part of the supported surface.
///
/// `@_spi`, not `package` access: `Fuzz/` and `Benchmarks/` are packages of their own, so that
/// no user's build resolves their dependencies, and `package` declarations are visible only to
/// targets of this package. An `@_spi` symbol stays out of the public interface users compile
/// against and out of the API-breakage check (README, "Versions and API stability").
@_spi(Benchmarks)
public enum BenchmarkEntryPoints {
    /// Prepares the Certificate Transparency check of a new chain, as a connection would run it:
    /// the log keys are parsed once here (a store parses them when a log list arrives), and the
    /// returned closure runs ``EmbeddedSCTs/check(leaf:issuer:logKey:nowMilliseconds:)`` on
    /// `leaf` and `issuer` and answers how many SCTs verified.
    ///
    /// - Throws: ``PinStoreError`` when a log key is not one a CT log can have.
    public static func embeddedSCTCheck(leaf: Data, issuer: Data, logKeys: [Data]) throws(PinStoreError) -> @Sendable () -> Int {
        var keys: [Digest32: CTLogKey] = [:]
        for spki in logKeys {
            let key = try CTLogKey(spki: spki)
            keys[key.id] = key
        }
        let known = keys
        return {
            let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
            let evidence = try? EmbeddedSCTs.check(leaf: leaf, issuer: issuer, logKey: { known[$0] }, nowMilliseconds: now)
            return evidence?.checks.count { $0.status == .verified } ?? 0
        }
    }

    /// The pin rules for one connection to `host` over `chain` (DER, leaf first, the issuer
    /// next), the leaf pinned, as a pooled connection is checked again before each request;
    /// with `certificateTransparency`, CT enforced against `logKeys` (one operator each). The
    /// first call judges the SCTs; later calls find the verdict cached, as every request on a
    /// pooled connection does. The closure answers whether the decision allowed.
    ///
    /// - Throws: ``PinStoreError`` when a log key or the chain cannot be read.
    public static func pooledPinDecision(host: String, chain: [Data], logKeys: [Data],
                                         certificateTransparency: Bool) throws(PinStoreError) -> @Sendable () -> Bool {
        let wire = CTLogList.Wire(
            logListTimestamp: Int64(Date().timeIntervalSince1970), profile: nil,
            logs: logKeys.enumerated().map { index, key in
                CTLogList.Wire.Log(key: key.base64EncodedString(), id: nil, operator: "Operator \(index)", type: nil, state: "usable",
                                   stateTimestamp: nil, temporalInterval: nil, previousOperators: nil)
            },
            hosts: nil)
        let logs = try CTLogList(wire)
        guard let validated = ValidatedChain(alreadyValidatedByCaller: chain) else {
            throw PinStoreError(.certificateMalformed, "The benchmark chain cannot be read.")
        }
        let name = try HostName(host)
        let pins = PinIndex(entries: [FingerprintEntry(name: host, fingerprint: SHA256Digest.hash(chain[0]), expires: 4_102_444_799)])
        let checker = CertificateTransparencyChecker(defaultMode: certificateTransparency ? .enforce : .off, checksPrivateAnchors: true)
        let rules = PinningRules(enforcement: .enforced, expectedNames: nil, staticPins: .none, certificateTransparency: checker)
        // Built once, as the store's snapshot is: a decision reads it, never builds it.
        let tables = PinningTables(list: pins, fallback: .empty, domainsConfig: nil, certificateTransparency: logs)
        return {
            let context = PinningContext(host: name, requestedName: host, evidence: .validated(validated), tables: tables,
                                         now: Int64(Date().timeIntervalSince1970))
            return rules.decide(context).isAllowed
        }
    }

    /// The pin rules for one connection to `host` over `chain` (DER, leaf first), the leaf
    /// pinned, with the CRL check enforced against `crls` (distribution point URL, DER CRL and
    /// the DER certificate of its issuer; verified and cached here, as a download would) or
    /// off when `crls` is nil. `newChain` forgets the certificates' distribution points before
    /// each decision (a chain never seen: OpenSSL parses each certificate again); otherwise
    /// the decision is a pooled re-check. The closure answers whether the decision allowed.
    public static func crlPinDecision(host: String, chain: [Data], crls: [(url: String, der: Data, issuer: Data)]?,
                                      newChain: Bool) throws(PinStoreError) -> @Sendable () -> Bool {
        guard let validated = ValidatedChain(alreadyValidatedByCaller: chain) else {
            throw PinStoreError(.certificateMalformed, "The benchmark chain cannot be read.")
        }
        let name = try HostName(host)
        let pins = PinIndex(entries: [FingerprintEntry(name: host, fingerprint: SHA256Digest.hash(chain[0]), expires: 4_102_444_799)])
        let checker = CRLChecker(defaultMode: crls == nil ? .off : .enforceSoftFail)
        let now = Int64(Date().timeIntervalSince1970)
        for crl in crls ?? [] {
            guard let fingerprint = Digest32(SHA256Digest.hash(crl.issuer)),
                  let key = ValidatedChain.publicKeyDigest(of: crl.issuer, fingerprint: fingerprint) else {
                throw PinStoreError(.certificateMalformed, "The benchmark CRL issuer cannot be read.")
            }
            do {
                try checker.install(url: crl.url, der: crl.der, issuer: crl.issuer, issuerKey: key, now: now)
            } catch {
                throw PinStoreError(.invalidListData, "The benchmark CRL does not verify: \(error)")
            }
        }
        let rules = PinningRules(enforcement: .enforced, expectedNames: nil, staticPins: .none, crl: checker)
        let tables = PinningTables(list: pins, fallback: .empty, domainsConfig: nil, certificateTransparency: nil)
        return {
            if newChain { CRLSubject.forgetAll() }
            let context = PinningContext(host: name, requestedName: host, evidence: .validated(validated), tables: tables,
                                         now: Int64(Date().timeIntervalSince1970))
            return rules.decide(context).isAllowed
        }
    }
}
