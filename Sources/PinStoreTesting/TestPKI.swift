import Foundation
import PinStore
internal import COpenSSL

/// A certificate with the chain and private key a server presents it with.
///
/// ```swift
/// let pki = try TestPKI(hosts: ["localhost"])
/// let server = try await TestHTTPSServer.start(presenting: pki.leaf)
/// print(pki.leaf.certificate.fingerprintBase64)
/// ```
public struct TestIdentity: Sendable, Hashable {
    /// The leaf certificate.
    public let certificate: X509Certificate
    /// What a server presents: the leaf first, then the intermediate certificates (no root).
    public let chain: [X509Certificate]
    /// ``chain`` as PEM, leaf first.
    public let certificateChainPEM: String
    /// The leaf's private key as unencrypted PKCS#8 PEM.
    public let privateKeyPEM: String

    /// ``chain`` as DER, leaf first (what `ChainValidator` and `PinStore` take).
    public var chainDER: [Data] { chain.map(\.derRepresentation) }
}

/// A throwaway public-key infrastructure made through the system OpenSSL: a root, an
/// intermediate, a leaf for the given DNS names, and an impostor leaf with the same names from
/// another CA (the certificate a mis-issuing or compromised CA would hand an attacker).
///
/// ```swift
/// let pki = try TestPKI(hosts: ["localhost", "api.example.test"])
/// let validator = ChainValidator(trustRoots: pki.trustRoots)
/// _ = try validator.validate(chain: pki.leaf.chainDER, hostname: "api.example.test")
/// ```
///
/// Every key is ECDSA P-256 and every signature ECDSA with SHA-256, which meets the ATS
/// transport minimums the pinned adapters enforce. The CAs are valid for a year on either
/// side of ``validity``, so leaves issued later for a past or future period still chain.
public struct TestPKI: Sendable {
    /// The DNS names ``leaf`` and ``impostor`` are valid for.
    public let hosts: [String]
    /// The validity period of ``leaf`` and ``impostor``.
    public let validity: DateInterval
    /// The self-signed root of the genuine chain.
    public let root: X509Certificate
    /// The intermediate CA that issues the genuine leaves.
    public let intermediate: X509Certificate
    /// A leaf for every name of ``hosts``, issued by ``intermediate``.
    public let leaf: TestIdentity
    /// The self-signed root of the impostor's CA, unrelated to ``root``.
    public let impostorRoot: X509Certificate
    /// A leaf for the same names as ``leaf``, issued by ``impostorRoot``: a valid chain when
    /// ``impostorRoot`` is trusted, refused by pinning.
    public let impostor: TestIdentity

    /// The genuine root only: what a client trusts when it trusts this PKI.
    public var trustRoots: TrustRoots { .anchors([root]) }

    /// The intermediate as a CA that can issue more leaves (``issueLeaf(for:validity:)``, and
    /// leaves with embedded SCTs).
    let issuer: Authority
    /// The root as a CA (it signs the CRL that may revoke ``intermediate``).
    let rootAuthority: Authority
    /// The impostor's root as a CA (a CRL from another issuer).
    let impostorAuthority: Authority

    /// Makes a root, an intermediate, a leaf for `hosts` and an impostor.
    ///
    /// - Parameters:
    ///   - hosts: DNS names (letters, digits, `-`, `.`, and `*` for a wildcard label); at least one.
    ///     The first is also the leaves' common name.
    ///   - validity: When the leaves are valid; by default from an hour ago for 30 days.
    /// - Throws: ``PinStoreTestingError`` when a name is unusable or an OpenSSL call fails.
    public init(hosts: [String], validity: DateInterval = TestPKI.defaultValidity()) throws(PinStoreTestingError) {
        try self.init(hosts: hosts, validity: validity, crlBaseURL: nil)
    }

    /// Makes a root, an intermediate, a leaf for `hosts` and an impostor, whose certificates
    /// name CRL distribution points under `crlBaseURL`.
    ///
    /// - Parameters:
    ///   - hosts: DNS names (letters, digits, `-`, `.`, and `*` for a wildcard label); at least one.
    ///     The first is also the leaves' common name.
    ///   - validity: When the leaves are valid; by default from an hour ago for 30 days.
    ///   - crlBaseURL: When given, the certificates name CRL distribution points under it:
    ///     the intermediate `<base>/root.crl`, every leaf `<base>/intermediate.crl`
    ///     (``rootCRLURL``, ``intermediateCRLURL``; serve ``crl(by:revoking:thisUpdate:nextUpdate:otherEntries:)``
    ///     there, with ``TestCRLServer``). nil: none.
    /// - Throws: ``PinStoreTestingError`` when a name is unusable or an OpenSSL call fails.
    public init(hosts: [String], validity: DateInterval = TestPKI.defaultValidity(), crlBaseURL: URL?) throws(PinStoreTestingError) {
        try Self.checkNames(hosts)
        let caValidity = DateInterval(start: validity.start.addingTimeInterval(-Self.caMargin),
                                      end: validity.end.addingTimeInterval(Self.caMargin))
        let rootAuthority = try Authority.root(commonName: "PinStoreTesting Root CA", validity: caValidity,
                                               crlURL: crlBaseURL?.appendingPathComponent("root.crl"))
        let intermediateAuthority = try rootAuthority.issueIntermediate(commonName: "PinStoreTesting Intermediate CA", validity: caValidity,
                                                                        crlURL: crlBaseURL?.appendingPathComponent("intermediate.crl"))
        let impostorAuthority = try Authority.root(commonName: "PinStoreTesting Impostor CA", validity: caValidity)
        self.rootAuthority = rootAuthority
        self.impostorAuthority = impostorAuthority
        self.hosts = hosts
        self.validity = validity
        self.root = rootAuthority.certificate
        self.intermediate = intermediateAuthority.certificate
        self.impostorRoot = impostorAuthority.certificate
        self.issuer = intermediateAuthority
        self.leaf = try intermediateAuthority.issueLeaf(names: hosts, validity: validity)
        self.impostor = try impostorAuthority.issueLeaf(names: hosts, validity: validity)
    }

    /// Issues another leaf from ``intermediate``, for `names` and `validity` (``validity`` when
    /// nil): a renewed certificate, one for other hosts, or an expired one.
    public func issueLeaf(for names: [String], validity: DateInterval? = nil) throws(PinStoreTestingError) -> TestIdentity {
        try Self.checkNames(names)
        return try issuer.issueLeaf(names: names, validity: validity ?? self.validity)
    }

    /// Issues another leaf from ``intermediate`` whose subject carries about `subjectPadding`
    /// more bytes (organizational units of 64 characters, each numbered): the oversized
    /// certificate a hostile partner presents, in the publisher's tests.
    package func issueLeaf(for names: [String], validity: DateInterval? = nil, subjectPadding: Int) throws(PinStoreTestingError) -> TestIdentity {
        try Self.checkNames(names)
        return try issuer.issueLeaf(names: names, validity: validity ?? self.validity, subjectPadding: subjectPadding)
    }

    /// Issues another leaf from ``intermediate`` whose CRL distribution points are
    /// `crlDistributionPoints`, each a distribution point of its own, in this order, instead of
    /// ``intermediateCRLURL``: a certificate whose issuer chose where clients fetch CRLs (a
    /// partner's private CA, or a hostile one naming a thousand).
    ///
    /// ```swift
    /// let points = (0..<1_000).map { crls.baseURL.appendingPathComponent("dp-\($0).crl") }
    /// let leaf = try pki.issueLeaf(for: ["localhost"], crlDistributionPoints: points)
    /// ```
    ///
    /// - Parameters:
    ///   - names: The DNS names (the first is also the common name).
    ///   - validity: ``validity`` when nil.
    ///   - crlDistributionPoints: The URLs, written as they are (any scheme); none for an empty array.
    public func issueLeaf(for names: [String], validity: DateInterval? = nil,
                          crlDistributionPoints: [URL]) throws(PinStoreTestingError) -> TestIdentity {
        try Self.checkNames(names)
        return try issuer.issueLeaf(names: names, validity: validity ?? self.validity, crlDistributionPoints: crlDistributionPoints)
    }

    /// From an hour before `start` (clock skew) for 30 days.
    public static func defaultValidity(from start: Date = Date()) -> DateInterval {
        DateInterval(start: start.addingTimeInterval(-3_600), duration: 30 * 86_400)
    }

    /// How far the CAs' validity reaches beyond the leaves'.
    static let caMargin: TimeInterval = 365 * 86_400

    static func checkNames(_ names: [String]) throws(PinStoreTestingError) {
        guard !names.isEmpty else { throw PinStoreTestingError("A test certificate needs at least one DNS name.") }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.*".unicodeScalars)
        for name in names {
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(allowed.contains), !name.hasPrefix("."), !name.hasSuffix(".") else {
                throw PinStoreTestingError("\"\(name)\" is not a DNS name a test certificate can carry (ASCII letters, digits, '-', '.', '*').")
            }
        }
    }
}

/// A CA: its certificate and the key it signs with.
///
/// `@unchecked Sendable`: both are immutable once made (``CertificateKey``'s note).
final class Authority: @unchecked Sendable {
    let certificate: X509Certificate
    let key: CertificateKey
    /// The PEM of ``certificate``, for the chains of the certificates it issues.
    let pem: String
    /// Whether servers present this CA's certificate after the leaves it issues (intermediates do,
    /// roots do not).
    let isPresented: Bool
    /// Where this CA publishes its CRL: named as the CRL distribution point of what it issues.
    let crlURL: URL?

    private init(certificate: X509Certificate, key: CertificateKey, pem: String, isPresented: Bool, crlURL: URL?) {
        self.certificate = certificate
        self.key = key
        self.pem = pem
        self.isPresented = isPresented
        self.crlURL = crlURL
    }

    /// A self-signed root.
    static func root(commonName: String, validity: DateInterval, crlURL: URL? = nil) throws(PinStoreTestingError) -> Authority {
        let key = try CertificateKey()
        let builder = try OwnedCertificate()
        try builder.setBasics(notBefore: validity.start, notAfter: validity.end)
        try builder.setSubject(commonName: commonName, organization: "PinStoreTesting")
        try builder.setIssuer(builder)
        try builder.setPublicKey(key)
        try builder.addExtension(NID_basic_constraints, "critical,CA:TRUE", issuer: builder)
        try builder.addExtension(NID_key_usage, "critical,keyCertSign,cRLSign", issuer: builder)
        try builder.addExtension(NID_subject_key_identifier, "hash", issuer: builder)
        try builder.sign(with: key)
        return try Authority(builder, key: key, isPresented: false, crlURL: crlURL)
    }

    /// An intermediate CA under this one (it issues leaves only: `pathlen:0`).
    func issueIntermediate(commonName: String, validity: DateInterval, crlURL: URL? = nil) throws(PinStoreTestingError) -> Authority {
        let key = try CertificateKey()
        let builder = try issued(commonName: commonName, validity: validity, key: key)
        let issuer = try OwnedCertificate(der: certificate.derRepresentation)
        try builder.addExtension(NID_basic_constraints, "critical,CA:TRUE,pathlen:0", issuer: issuer)
        try builder.addExtension(NID_key_usage, "critical,keyCertSign,cRLSign", issuer: issuer)
        try builder.addExtension(NID_subject_key_identifier, "hash", issuer: issuer)
        try builder.addExtension(NID_authority_key_identifier, "keyid:always", issuer: issuer)
        try builder.sign(with: self.key)
        return try Authority(builder, key: key, isPresented: true, crlURL: crlURL)
    }

    /// A TLS server leaf for `names` (the first is also the common name).
    /// With `crlDistributionPoints`, those replace this CA's ``crlURL``.
    func issueLeaf(names: [String], validity: DateInterval, crlDistributionPoints: [URL]? = nil) throws(PinStoreTestingError) -> TestIdentity {
        let key = try CertificateKey()
        let builder = try leafBuilder(names: names, validity: validity, key: key)
        if let crlDistributionPoints {
            if crlURL != nil { try builder.deleteExtension(NID_crl_distribution_points) }
            if !crlDistributionPoints.isEmpty {
                try builder.addExtension(NID_crl_distribution_points, crlDistributionPoints.map { "URI:\($0.absoluteString)" }.joined(separator: ","),
                                         issuer: builder)
            }
        }
        try builder.sign(with: self.key)
        return try identity(builder, key: key)
    }

    /// A TLS server leaf for `names` with about `subjectPadding` bytes more in its subject.
    func issueLeaf(names: [String], validity: DateInterval, subjectPadding: Int) throws(PinStoreTestingError) -> TestIdentity {
        let key = try CertificateKey()
        let builder = try leafBuilder(names: names, validity: validity, key: key)
        let unit = 64
        for index in 0..<((max(subjectPadding, 0) + unit - 1) / unit) {
            let label = "\(index) "
            try builder.appendSubjectOrganizationalUnit(label + String(repeating: "x", count: unit - label.count))
        }
        try builder.sign(with: self.key)
        return try identity(builder, key: key)
    }

    /// A TLS server leaf for `names`, every extension set, not yet signed.
    func leafBuilder(names: [String], validity: DateInterval, key: CertificateKey) throws(PinStoreTestingError) -> OwnedCertificate {
        let builder = try issued(commonName: names[0], validity: validity, key: key)
        let issuer = try OwnedCertificate(der: certificate.derRepresentation)
        try builder.addExtension(NID_basic_constraints, "critical,CA:FALSE", issuer: issuer)
        try builder.addExtension(NID_key_usage, "critical,digitalSignature", issuer: issuer)
        try builder.addExtension(NID_ext_key_usage, "serverAuth", issuer: issuer)
        try builder.addExtension(NID_subject_alt_name, names.map { "DNS:\($0)" }.joined(separator: ","), issuer: issuer)
        try builder.addExtension(NID_subject_key_identifier, "hash", issuer: issuer)
        try builder.addExtension(NID_authority_key_identifier, "keyid:always", issuer: issuer)
        return builder
    }

    /// The signed leaf in `builder`, with its chain and `key`, as a server presents it.
    func identity(_ builder: OwnedCertificate, key: CertificateKey) throws(PinStoreTestingError) -> TestIdentity {
        let leaf = try Self.parse(builder)
        return TestIdentity(certificate: leaf,
                            chain: isPresented ? [leaf, certificate] : [leaf],
                            certificateChainPEM: try builder.pem() + (isPresented ? pem : ""),
                            privateKeyPEM: try key.privateKeyPEM())
    }

    /// A certificate issued by this CA with the common subject, issuer, key and dates set.
    private func issued(commonName: String, validity: DateInterval, key: CertificateKey) throws(PinStoreTestingError) -> OwnedCertificate {
        let builder = try OwnedCertificate()
        try builder.setBasics(notBefore: validity.start, notAfter: validity.end)
        try builder.setSubject(commonName: commonName, organization: "PinStoreTesting")
        try builder.setIssuer(try OwnedCertificate(der: certificate.derRepresentation))
        try builder.setPublicKey(key)
        if let crlURL {
            try builder.addExtension(NID_crl_distribution_points, "URI:\(crlURL.absoluteString)", issuer: builder)
        }
        return builder
    }

    private convenience init(_ builder: OwnedCertificate, key: CertificateKey, isPresented: Bool, crlURL: URL?) throws(PinStoreTestingError) {
        self.init(certificate: try Self.parse(builder), key: key, pem: try builder.pem(), isPresented: isPresented, crlURL: crlURL)
    }

    /// The finished certificate read back by PinStore's own parser.
    private static func parse(_ builder: OwnedCertificate) throws(PinStoreTestingError) -> X509Certificate {
        let der = try builder.der()
        do {
            return try X509Certificate(derRepresentation: der)
        } catch {
            throw PinStoreTestingError("PinStore could not read back a certificate the kit made: \(error.reason)", openSSLErrors: error.openSSLErrors)
        }
    }
}
