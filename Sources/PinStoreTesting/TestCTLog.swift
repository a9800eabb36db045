import Foundation
import PinStore

/// A Certificate Transparency log for tests: a key pair that signs SCTs for the leaves
/// ``TestPKI/issueLeaf(for:validity:embedding:corruption:)`` issues.
///
/// Nothing is published anywhere: the log is its key, its id and the SCTs it signs. Give the
/// client under test its ``subjectPublicKeyInfo`` (or ``logID``) the way a real log list would.
///
/// ```swift
/// let pki = try TestPKI(hosts: ["localhost"])
/// let logA = try TestCTLog(keyType: .p256)
/// let logB = try TestCTLog(keyType: .rsa2048, kind: .staticCTAPI)
/// let leaf = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: logA), TestSCT(log: logB)])
/// ```
public struct TestCTLog: Sendable {
    /// The log's key type (RFC 6962 §2.1.4 allows ECDSA P-256 and RSA).
    ///
    /// A closed set: the two key types RFC 6962 allows a log.
    public enum KeyType: Sendable, Hashable {
        /// ECDSA on NIST P-256.
        case p256
        /// RSA with a 2048-bit modulus, the smallest CT logs use.
        case rsa2048
    }

    /// The kind of log, which decides what its SCTs carry.
    ///
    /// A closed set: the two log APIs whose SCTs the store reads; another is a new list
    /// format (as `FingerprintEntry.Kind` says) and a breaking release.
    public enum Kind: Sendable, Hashable {
        /// A classic RFC 6962 log: SCTs without extensions.
        case rfc6962
        /// A static-ct-api ("tiled") log (c2sp.org/static-ct-api): every SCT carries a
        /// `leaf_index` extension (type 0, 2-byte length 5, a 40-bit index), which is signed
        /// like any extension bytes.
        case staticCTAPI
    }

    /// The key type.
    public let keyType: KeyType
    /// The kind of log.
    public let kind: Kind
    /// The log's public key as a DER SubjectPublicKeyInfo: what a log list publishes.
    public let subjectPublicKeyInfo: Data
    /// The RFC 6962 log id: SHA-256 of ``subjectPublicKeyInfo``, carried in every SCT.
    public let logID: Data

    let key: CertificateKey

    /// Makes a log with a fresh key.
    ///
    /// - Throws: ``PinStoreTestingError`` when OpenSSL cannot generate the key.
    public init(keyType: KeyType = .p256, kind: Kind = .rfc6962) throws(PinStoreTestingError) {
        switch keyType {
        case .p256: key = try CertificateKey()
        case .rsa2048: key = try CertificateKey(rsaBits: 2048)
        }
        self.keyType = keyType
        self.kind = kind
        subjectPublicKeyInfo = try key.subjectPublicKeyInfo()
        logID = SHA256Digest.hash(subjectPublicKeyInfo)
    }

    /// The SCT `extensions` bytes this log puts in an SCT for entry `leafIndex`: nothing for an
    /// RFC 6962 log; for a static-ct-api log the `leaf_index` extension, `00` (type), `00 05`
    /// (length), then the index as 5 big-endian bytes.
    public func sctExtensions(leafIndex: UInt64) -> Data {
        switch kind {
        case .rfc6962:
            return Data()
        case .staticCTAPI:
            var bytes = Data([0x00, 0x00, 0x05])
            for shift in stride(from: 32, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: leafIndex >> UInt64(shift))) }
            return bytes
        }
    }

    /// A log list in the format OpenSSL's `CTLOG_STORE_load_file` reads (an `enabled_logs` line
    /// and a section per log with its Base64 DER key), for cross-checking leaves with OpenSSL's
    /// own `SCT_LIST_validate`.
    public static func openSSLLogListFile(_ logs: [TestCTLog]) -> String {
        let names = logs.indices.map { "log\($0)" }
        var text = "enabled_logs = \(names.joined(separator: ","))\n"
        for (name, log) in zip(names, logs) {
            text += "\n[\(name)]\ndescription = PinStoreTesting \(name)\nkey = \(log.subjectPublicKeyInfo.base64EncodedString())\n"
        }
        return text
    }
}

/// One SCT to embed in a leaf: the log that signs it, when, and (for a static-ct-api log) the
/// leaf index.
public struct TestSCT: Sendable {
    /// The log that signs the SCT.
    public let log: TestCTLog
    /// The SCT timestamp. A time in the future tests future-timestamp refusals; one before a
    /// log's retirement tests retired logs.
    public let timestamp: Date
    /// The `leaf_index` a static-ct-api log puts in the SCT (ignored for RFC 6962 logs).
    public let leafIndex: UInt64

    /// An SCT from `log` at `timestamp` (by default a minute ago, before any clock a client
    /// checks against).
    public init(log: TestCTLog, timestamp: Date = Date(timeIntervalSinceNow: -60), leafIndex: UInt64 = 0) {
        self.log = log
        self.timestamp = timestamp
        self.leafIndex = leafIndex
    }

    /// ``timestamp`` in milliseconds since the Unix epoch (RFC 6962's unit; 0 before 1970).
    public var timestampMilliseconds: UInt64 {
        UInt64(max(0, (timestamp.timeIntervalSince1970 * 1_000).rounded(.down)))
    }
}

/// A deliberate defect in a leaf's embedded SCTs, for tests of how a client refuses it.
///
/// Not an enum: a minor release may add defects. Each is made by its static member
/// (`.flipSignatureByte(sctIndex: 0)`), as the enum's cases were.
public struct TestSCTCorruption: Sendable, Hashable {
    /// The defects this version builds; internal so that ``TestPKI`` must build each one.
    enum Backing: Sendable, Hashable {
        case flipSignatureByte(sctIndex: Int)
        case sctListCopied(from: X509Certificate)
        case duplicatedExtension
        case rawExtensionValue(Data)
    }

    let backing: Backing

    private init(_ backing: Backing) { self.backing = backing }

    /// Flips the last byte of the signature of the SCT at this position (so the signature stays
    /// well-formed and simply does not verify).
    public static func flipSignatureByte(sctIndex: Int) -> TestSCTCorruption { .init(.flipSignatureByte(sctIndex: sctIndex)) }
    /// Embeds the SCT list of `certificate` instead of this leaf's own: valid SCTs for another
    /// certificate.
    public static func sctListCopied(from certificate: X509Certificate) -> TestSCTCorruption { .init(.sctListCopied(from: certificate)) }
    /// Embeds the SCT list extension twice.
    public static let duplicatedExtension = TestSCTCorruption(.duplicatedExtension)
    /// Embeds these bytes as the SCT list extension's value (extnValue), unchecked: for
    /// truncated or malformed extensions. A well-formed value is a DER OCTET STRING holding
    /// the TLS-encoded list.
    public static func rawExtensionValue(_ value: Data) -> TestSCTCorruption { .init(.rawExtensionValue(value)) }
}
