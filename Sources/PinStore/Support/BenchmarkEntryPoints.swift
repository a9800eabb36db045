import Foundation

/// What the benchmarks in `Benchmarks/` (a package of their own, never built by users) call to
/// time internal work that no public API exposes on its own yet. Reached only through
/// `@_spi(Benchmarks) import PinStore`; not part of the supported surface.
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
}
