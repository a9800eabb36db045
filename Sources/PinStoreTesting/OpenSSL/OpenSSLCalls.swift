import Foundation
import PinStore
internal import COpenSSL
internal import CPinStoreShims

/// OpenSSL's per-thread error queue, drained into the kit's thrown errors.
enum OpenSSLErrors {
    /// An error saying `what` failed, carrying whatever OpenSSL queued.
    static func error(_ what: String) -> PinStoreTestingError {
        PinStoreTestingError("OpenSSL could not \(what).", openSSLErrors: OpenSSLErrorQueue.drain())
    }
}

/// Owns one writable memory `BIO` and frees it with the object.
final class OwnedMemoryBIO {
    let pointer: OpaquePointer

    init() throws(PinStoreTestingError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrors.error("allocate a memory buffer") }
        pointer = bio
    }

    deinit {
        BIO_free(pointer)
    }

    /// Everything written so far, as UTF-8 text (PEM is ASCII).
    var text: String {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = CPinStoreShims_BIO_get_mem_data(pointer, &data)
        guard length > 0, let data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

/// Owns one P-256 `EVP_PKEY` made for a test certificate, and frees it with the object.
///
/// `@unchecked Sendable`: the key is never changed after generation, and OpenSSL 3 keys may be
/// used for signing from several threads at once.
final class CertificateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// A fresh P-256 key from OpenSSL's generator.
    init() throws(PinStoreTestingError) {
        guard let key = CPinStoreShims_EVP_PKEY_generate_ec("prime256v1") else {
            throw OpenSSLErrors.error("generate a P-256 key")
        }
        pointer = key
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// The private key as unencrypted PKCS#8 PEM (what TLS servers load).
    func privateKeyPEM() throws(PinStoreTestingError) -> String {
        let bio = try OwnedMemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrors.error("write the private key as PEM")
        }
        return bio.text
    }
}

/// Owns one `X509` (a certificate being built, or one parsed back) and frees it with the object.
final class OwnedCertificate {
    let pointer: OpaquePointer

    /// An empty certificate to fill in.
    init() throws(PinStoreTestingError) {
        guard let certificate = X509_new() else { throw OpenSSLErrors.error("allocate a certificate") }
        pointer = certificate
    }

    /// The certificate in `der`.
    init(der: Data) throws(PinStoreTestingError) {
        let parsed: OpaquePointer? = der.withUnsafeBytes { raw in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_X509(nil, &cursor, raw.count)
        }
        guard let parsed else { throw OpenSSLErrors.error("parse a DER certificate") }
        pointer = parsed
    }

    deinit {
        X509_free(pointer)
    }

    /// Sets version 3, a random positive 63-bit serial number and the validity period.
    func setBasics(notBefore: Date, notAfter: Date) throws(PinStoreTestingError) {
        guard X509_set_version(pointer, 2) == 1 else { throw OpenSSLErrors.error("set the certificate version") }
        var serial: UInt64 = 0
        let random = withUnsafeMutableBytes(of: &serial) { raw in
            RAND_bytes(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(raw.count))
        }
        guard random == 1 else { throw OpenSSLErrors.error("draw a random serial number") }
        // Positive and never zero, as RFC 5280 asks.
        guard ASN1_INTEGER_set_uint64(X509_get_serialNumber(pointer), (serial >> 1) | 1) == 1 else {
            throw OpenSSLErrors.error("set the serial number")
        }
        guard ASN1_TIME_set(X509_getm_notBefore(pointer), time_t(notBefore.timeIntervalSince1970.rounded(.down))) != nil,
              ASN1_TIME_set(X509_getm_notAfter(pointer), time_t(notAfter.timeIntervalSince1970.rounded(.down))) != nil else {
            throw OpenSSLErrors.error("set the validity period")
        }
    }

    /// Sets the subject to `O=organization, CN=commonName` (UTF-8).
    func setSubject(commonName: String, organization: String) throws(PinStoreTestingError) {
        guard let name = X509_get_subject_name(pointer) else { throw OpenSSLErrors.error("read the subject name") }
        for (field, value) in [("O", organization), ("CN", commonName)] {
            let rc = X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0)
            guard rc == 1 else { throw OpenSSLErrors.error("add \(field)=\(value) to the subject") }
        }
    }

    /// Copies `issuer`'s subject into this certificate's issuer name.
    func setIssuer(_ issuer: OwnedCertificate) throws(PinStoreTestingError) {
        guard X509_set_issuer_name(pointer, X509_get_subject_name(issuer.pointer)) == 1 else {
            throw OpenSSLErrors.error("set the issuer name")
        }
    }

    /// Sets the subject public key.
    func setPublicKey(_ key: CertificateKey) throws(PinStoreTestingError) {
        guard X509_set_pubkey(pointer, key.pointer) == 1 else { throw OpenSSLErrors.error("set the public key") }
    }

    /// Adds one extension written in OpenSSL's configuration syntax (`critical,CA:TRUE`), with
    /// `issuer` as the issuing certificate (for the authority key identifier).
    func addExtension(_ nid: Int32, _ value: String, issuer: OwnedCertificate) throws(PinStoreTestingError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer.pointer, pointer, nil, nil, 0)
        guard let made = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
            throw OpenSSLErrors.error("make the extension \(Self.shortName(nid)) = \(value)")
        }
        let certificateExtension = OwnedExtension(taking: made)
        // X509_add_ext copies the extension; ours is freed with `certificateExtension`.
        let added = withExtendedLifetime(certificateExtension) { X509_add_ext(pointer, certificateExtension.pointer, -1) }
        guard added == 1 else {
            throw OpenSSLErrors.error("add the extension \(Self.shortName(nid))")
        }
    }

    /// OpenSSL's short name of the extension `nid`, for messages.
    private static func shortName(_ nid: Int32) -> String {
        OBJ_nid2sn(nid).map { String(cString: $0) } ?? "NID \(nid)"
    }

    /// Signs the certificate with `key` (ECDSA with SHA-256).
    func sign(with key: CertificateKey) throws(PinStoreTestingError) {
        guard X509_sign(pointer, key.pointer, EVP_sha256()) > 0 else { throw OpenSSLErrors.error("sign the certificate") }
    }

    /// The DER encoding.
    func der() throws(PinStoreTestingError) -> Data {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(pointer, &out)
        guard length > 0, let out else { throw OpenSSLErrors.error("encode the certificate as DER") }
        defer { CPinStoreShims_OPENSSL_free(out) }
        return Data(bytes: out, count: Int(length))
    }

    /// The PEM encoding.
    func pem() throws(PinStoreTestingError) -> String {
        let bio = try OwnedMemoryBIO()
        guard PEM_write_bio_X509(bio.pointer, pointer) == 1 else { throw OpenSSLErrors.error("write the certificate as PEM") }
        return bio.text
    }
}

/// Owns one `X509_EXTENSION` while it is added to a certificate, and frees it with the object.
final class OwnedExtension {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_EXTENSION_free(pointer)
    }
}
