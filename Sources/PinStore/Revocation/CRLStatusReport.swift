import Foundation

/// What `pinstore revocation status` prints: the validated chain, each certificate's CRL
/// distribution points, each CRL fetched and verified as a store would (its dates, age and
/// size, or why it is unavailable), and the verdict. A fresh checker with no storage folder,
/// so the report always shows what the network serves now.
package enum CRLStatusReport {
    /// The report's lines and whether the chain is revoked.
    package static func report(host: String, presentedChain: [Data], trustRoots: TrustRoots,
                               timeout: TimeInterval = 10) async -> (lines: [String], revoked: Bool) {
        var lines: [String] = []
        let validated: ValidatedChain
        do {
            let der = try ChainValidator(trustRoots: trustRoots).validatedDER(chain: presentedChain, hostname: host)
            guard let chain = ValidatedChain(trustEvaluationOutput: der) else {
                return (["the validated chain could not be read back"], false)
            }
            validated = chain
        } catch {
            return (["the chain is not trusted for \(host): \(error)"], false)
        }
        let checker = CRLChecker(defaultMode: .enforceSoftFail, budget: timeout, timeout: timeout)
        let now = Int64(Date().timeIntervalSince1970)
        for depth in 0..<validated.count {
            let certificate = try? X509Certificate(derRepresentation: validated.certificates[depth])
            lines.append("[\(depth)] \(certificate?.subject ?? "?")")
            guard depth < validated.count - 1 else {
                lines.append("    the anchor: trusted by configuration, not checked")
                continue
            }
            guard let subject = CRLSubject.of(validated.certificates[depth], fingerprint: validated.fingerprints[depth]) else { continue }
            if subject.urls.isEmpty { lines.append("    no http CRL distribution point") }
            for url in subject.urls {
                await checker.load(url: url, issuer: validated.certificates[depth + 1], issuerKey: validated.keys[depth + 1], forceDownload: true)
                let entry = checker.entry(for: url.absoluteString)
                if let crl = entry?.crl {
                    lines.append("    CRL \(url.absoluteString): \(crl.der.count) bytes, \(crl.revoked.count) entries, "
                                 + "thisUpdate \(Self.date(crl.thisUpdate)) (age \(max(0, now - crl.thisUpdate)) s), nextUpdate \(Self.date(crl.nextUpdate))")
                } else {
                    lines.append("    CRL \(url.absoluteString): unavailable: \(entry?.failure.map { "\($0)" } ?? "not fetched")")
                }
            }
        }
        let verdict = checker.verdict(chain: validated, now: now)
        switch verdict {
        case .good: lines.append("verdict: good (no certificate of the chain is revoked)")
        case .skipped: lines.append("verdict: skipped (no certificate names an http CRL distribution point)")
        case .revoked(let failure): lines.append("verdict: REVOKED: \(failure)")
        case .unavailable(let failure): lines.append("verdict: unavailable: \(failure)")
        }
        if case .revoked = verdict { return (lines, true) }
        return (lines, false)
    }

    private static func date(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
