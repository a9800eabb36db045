import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// An X.509 certificate, parsed by the system OpenSSL into plain Swift values.
///
/// Everything dynamic pinning needs is read once at parse time, so the value is cheap to
/// copy, `Sendable`, and holds no OpenSSL object.
///
/// ```swift
/// let certificate = try X509Certificate(derRepresentation: leafDER)
/// print(certificate.commonName ?? "-", certificate.fingerprintBase64)
/// ```
public struct X509Certificate: Sendable, Hashable {
    /// The certificate's DER encoding, exactly as parsed.
    public let derRepresentation: Data
    /// The subject distinguished name, RFC 2253 style (`CN=localhost,O=...`).
    public let subject: String
    /// The issuer distinguished name, RFC 2253 style.
    public let issuer: String
    /// The subject's last (most specific) common name, if it has one.
    public let commonName: String?
    /// DNS names from the subjectAltName extension, in certificate order.
    public let dnsNames: [String]
    /// IP addresses from the subjectAltName extension, in textual form (`127.0.0.1`, `::1`).
    public let ipAddresses: [String]
    /// Start of the validity period.
    public let notBefore: Date
    /// End of the validity period (the last valid second).
    public let notAfter: Date
    /// SHA-256 of ``derRepresentation``: the `fingerprint` of the list format.
    public let fingerprint: Data
    /// The DER SubjectPublicKeyInfo.
    public let subjectPublicKeyInfo: Data
    /// The serial number (for the signed list's issuer-and-serial revocations).
    package let serialNumber: CertificateSerial
    /// Whether OpenSSL would accept the certificate as an issuer (`X509_check_ca`): a
    /// revocation of a certificate that is not can only ever match a chain's leaf.
    package let isCertificateAuthority: Bool

    /// ``fingerprint`` as padded standard Base64.
    public var fingerprintBase64: String { fingerprint.base64EncodedString() }
    /// ``fingerprint`` as lowercase hex.
    public var fingerprintHex: String { fingerprint.map { String(format: "%02x", $0) }.joined() }
    /// SHA-256 of the SubjectPublicKeyInfo in Base64: the `SPKI-SHA256-BASE64` pin of Apple's
    /// `NSPinnedDomains`.
    public var spkiSHA256Base64: String { SHA256Digest.hash(subjectPublicKeyInfo).base64EncodedString() }

    /// Parses one DER certificate. Trailing bytes after it are refused.
    public init(derRepresentation der: Data) throws(PinStoreError) {
        guard !der.isEmpty else {
            throw PinStoreError(.noCertificate, "The certificate data is empty.")
        }
        let handle = try X509Handle(der: der)
        derRepresentation = der
        subject = handle.name(X509_get_subject_name(handle.pointer))
        issuer = handle.name(X509_get_issuer_name(handle.pointer))
        commonName = handle.commonName
        (dnsNames, ipAddresses) = handle.subjectAlternativeNames
        notBefore = handle.date(X509_get0_notBefore(handle.pointer))
        notAfter = handle.date(X509_get0_notAfter(handle.pointer))
        fingerprint = SHA256Digest.hash(der)
        subjectPublicKeyInfo = handle.subjectPublicKeyInfo
        guard let serial = handle.serialNumber else {
            throw PinStoreError(.certificateMalformed, "The certificate's serial number could not be read.", openSSLErrors: OpenSSLErrorQueue.drain())
        }
        serialNumber = serial
        isCertificateAuthority = X509_check_ca(handle.pointer) != 0
    }

    /// Whether `issuer` issued this certificate, as OpenSSL judges it: the names and key
    /// identifiers match (`X509_check_issued`) and the signature verifies with the issuer's key.
    /// Dates and trust are not looked at. For tools that pair a certificate with its issuer
    /// (``ListRevocations``' issuer-and-serial entries): a wrong pairing would make an entry that
    /// matches nothing.
    package func isIssued(by issuer: X509Certificate) -> Bool {
        guard let subject = try? X509Handle(der: derRepresentation), let issuing = try? X509Handle(der: issuer.derRepresentation) else {
            return false
        }
        defer { OpenSSLErrorQueue.clear() }
        guard X509_check_issued(issuing.pointer, subject.pointer) == X509_V_OK, let key = X509_get0_pubkey(issuing.pointer) else {
            return false
        }
        return X509_verify(subject.pointer, key) == 1
    }

    /// Parses every certificate in a PEM text (a single certificate or a bundle). Explanatory
    /// text between blocks is ignored; blocks of other kinds (keys) are skipped.
    public static func certificates(pem: String) throws(PinStoreError) -> [X509Certificate] {
        let blocks = try PEMDocument.blocks(in: pem)
        var certificates: [X509Certificate] = []
        for block in blocks where block.label == "CERTIFICATE" || block.label == "TRUSTED CERTIFICATE" || block.label == "X509 CERTIFICATE" {
            do {
                certificates.append(try X509Certificate(derRepresentation: block.der))
            } catch {
                throw PinStoreError(.certificateMalformed, "PEM certificate \(certificates.count + 1) is not a well-formed X.509 certificate.", openSSLErrors: error.openSSLErrors)
            }
        }
        guard !certificates.isEmpty else {
            throw PinStoreError(.noCertificate, "No -----BEGIN CERTIFICATE----- block was found.")
        }
        return certificates
    }

    /// Parses certificate file contents: PEM (one or many) when it looks like text with a
    /// BEGIN line, otherwise a single DER certificate.
    public static func certificates(fileContents data: Data) throws(PinStoreError) -> [X509Certificate] {
        if data.isEmpty {
            throw PinStoreError(.noCertificate, "The certificate data is empty.")
        }
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") {
            return try certificates(pem: text)
        }
        return [try X509Certificate(derRepresentation: data)]
    }
}

/// Owns one parsed `X509` for the duration of field extraction or chain building.
final class X509Handle {
    let pointer: OpaquePointer

    init(der: Data) throws(PinStoreError) {
        let parsed: OpaquePointer? = der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let certificate = d2i_X509(nil, &cursor, raw.count) else { return nil }
            guard cursor == base + raw.count else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        guard let parsed else {
            let errors = OpenSSLErrorQueue.drain()
            throw PinStoreError(.certificateMalformed, "The \(der.count) bytes are not exactly one DER X.509 certificate (truncated, trailing data, or not a certificate).", openSSLErrors: errors)
        }
        pointer = parsed
    }

    deinit {
        X509_free(pointer)
    }

    func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = MemoryBIO() else { return "" }
        // RFC 2253 ordering and escaping, UTF-8 output.
        let flags = CPinStoreShims_XN_FLAG_RFC2253_UTF8()
        guard X509_NAME_print_ex(bio.pointer, name, 0, flags) >= 0 else {
            OpenSSLErrorQueue.clear()
            return ""
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    var commonName: String? {
        guard let subject = X509_get_subject_name(pointer) else { return nil }
        var index: Int32 = -1
        var last: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(subject, NID_commonName, index)
            if index < 0 { break }
            last = index
        }
        guard last >= 0, let entry = X509_NAME_get_entry(subject, last),
              let value = X509_NAME_ENTRY_get_data(entry) else { return nil }
        return Self.utf8(value)
    }

    var subjectAlternativeNames: (dns: [String], ip: [String]) {
        guard let raw = X509_get_ext_d2i(pointer, NID_subject_alt_name, nil, nil) else {
            OpenSSLErrorQueue.clear()
            return ([], [])
        }
        let names = OpaquePointer(raw)
        defer { CPinStoreShims_GENERAL_NAMES_free(names) }
        var dns: [String] = []
        var ips: [String] = []
        for index in 0..<CPinStoreShims_sk_GENERAL_NAME_num(names) {
            guard let name = CPinStoreShims_sk_GENERAL_NAME_value(names, index) else { continue }
            var type: Int32 = 0
            guard let value = GENERAL_NAME_get0_value(name, &type) else { continue }
            let string = value.assumingMemoryBound(to: ASN1_STRING.self)
            switch type {
            case GEN_DNS:
                if let text = Self.utf8(string) { dns.append(text) }
            case GEN_IPADD:
                if let text = Self.ipAddress(string) { ips.append(text) }
            default:
                continue
            }
        }
        return (dns, ips)
    }

    /// Unix seconds of an ASN.1 time, nil when it cannot be read.
    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return Int64(timegm(&parts))
    }

    func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSLErrorQueue.clear()
            return Date(timeIntervalSince1970: 0)
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    var subjectPublicKeyInfo: Data {
        guard let key = X509_get_X509_PUBKEY(pointer) else { return Data() }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_PUBKEY(key, &out)
        guard length > 0, let out else {
            OpenSSLErrorQueue.clear()
            return Data()
        }
        defer { openSSLFree(out) }
        return Data(bytes: out, count: Int(length))
    }

    private static func utf8(_ string: UnsafePointer<ASN1_STRING>?) -> String? {
        guard let string else { return nil }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&out, UnsafeMutablePointer(mutating: string))
        guard length >= 0, let out else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { openSSLFree(out) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
    }

    private static func ipAddress(_ string: UnsafePointer<ASN1_STRING>?) -> String? {
        guard let string, let bytes = ASN1_STRING_get0_data(string) else { return nil }
        let length = Int(ASN1_STRING_length(string))
        let family: Int32
        switch length {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, bytes, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
