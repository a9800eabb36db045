import Foundation
import PinStoreTesting
@testable import PinStore

/// The test PKI and CT logs every Certificate Transparency test uses, made once per process
/// (an RSA-2048 key takes a while to generate), with the SCT check wired to them.
struct CTFixture: Sendable {
    let pki: TestPKI
    /// An RFC 6962 log with a P-256 key.
    let p256Log: TestCTLog
    /// An RFC 6962 log with an RSA-2048 key.
    let rsaLog: TestCTLog
    /// A static-ct-api log (its SCTs carry a `leaf_index`), P-256.
    let staticLog: TestCTLog
    /// A log no client knows.
    let unknownLog: TestCTLog
    /// The keys a client knows: the first three logs, parsed once.
    let keys: [Digest32: CTLogKey]

    private static let shared = Result { () throws -> CTFixture in try CTFixture() }

    /// The process's fixture.
    static func get() throws -> CTFixture { try shared.get() }

    private init() throws {
        pki = try TestPKI(hosts: ["ct.pinstore.test"])
        p256Log = try TestCTLog(keyType: .p256)
        rsaLog = try TestCTLog(keyType: .rsa2048)
        staticLog = try TestCTLog(keyType: .p256, kind: .staticCTAPI)
        unknownLog = try TestCTLog(keyType: .p256)
        var keys: [Digest32: CTLogKey] = [:]
        for log in [p256Log, rsaLog, staticLog] {
            let key = try CTLogKey(spki: log.subjectPublicKeyInfo)
            keys[key.id] = key
        }
        self.keys = keys
    }

    /// The issuer of every leaf the fixture issues (the intermediate), DER.
    var issuer: Data { pki.intermediate.derRepresentation }

    /// A leaf for `ct.pinstore.test` embedding `scts`, with `corruption` if any.
    func leaf(_ scts: [TestSCT], corruption: TestSCTCorruption? = nil) throws -> X509Certificate {
        try pki.issueLeaf(for: ["ct.pinstore.test"], embedding: scts, corruption: corruption).certificate
    }

    /// Now, in milliseconds since the epoch.
    static var nowMilliseconds: UInt64 { UInt64(Date().timeIntervalSince1970 * 1_000) }

    /// The SCT check of `leaf` against the known logs, now.
    func check(_ leaf: X509Certificate, issuer: Data? = nil) throws(CertificateTransparencyError) -> EmbeddedSCTEvidence {
        try EmbeddedSCTs.check(leaf: leaf.derRepresentation, issuer: issuer ?? self.issuer,
                               logKey: { keys[$0] }, nowMilliseconds: Self.nowMilliseconds)
    }

    /// The statuses of `check(_:)`, in certificate order.
    func statuses(_ leaf: X509Certificate, issuer: Data? = nil) throws(CertificateTransparencyError) -> [SCTStatus] {
        try check(leaf, issuer: issuer).checks.map(\.status)
    }
}
