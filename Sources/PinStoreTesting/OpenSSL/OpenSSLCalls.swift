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

    /// A fresh RSA key of `bits` bits from OpenSSL's generator (for test CT logs: RFC 6962 logs
    /// may sign with RSA).
    init(rsaBits bits: UInt32) throws(PinStoreTestingError) {
        guard let key = CPinStoreShims_EVP_PKEY_generate_rsa(bits) else {
            throw OpenSSLErrors.error("generate a \(bits)-bit RSA key")
        }
        pointer = key
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// The public key as a DER SubjectPublicKeyInfo.
    func subjectPublicKeyInfo() throws(PinStoreTestingError) -> Data {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pointer, &out)
        guard length > 0, let out else { throw OpenSSLErrors.error("encode a public key as DER") }
        defer { CPinStoreShims_OPENSSL_free(out) }
        return Data(bytes: out, count: Int(length))
    }

    /// A SHA-256 signature of `message`: DER ECDSA for an EC key, PKCS#1 v1.5 for RSA (OpenSSL's
    /// defaults, and what RFC 6962 logs produce).
    func signature(for message: Data) throws(PinStoreTestingError) -> Data {
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLErrors.error("allocate a signing context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else {
            throw OpenSSLErrors.error("start a SHA-256 signature")
        }
        var length = 0
        let sized = message.withUnsafeBytes { raw in
            EVP_DigestSign(context, nil, &length, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard sized == 1 else { throw OpenSSLErrors.error("size a signature") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBytes { raw in
            EVP_DigestSign(context, &signature, &length, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard signed == 1 else { throw OpenSSLErrors.error("sign a message") }
        return Data(signature.prefix(length))
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

    /// Appends `OU=value` to the subject (UTF-8; OpenSSL allows 64 characters per unit).
    func appendSubjectOrganizationalUnit(_ value: String) throws(PinStoreTestingError) {
        guard let name = X509_get_subject_name(pointer),
              X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_UTF8, value, -1, -1, 0) == 1 else {
            throw OpenSSLErrors.error("add OU=\(value) to the subject")
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

    /// Removes the first extension `nid` (the precertificate poison, once the logs have signed).
    func deleteExtension(_ nid: Int32) throws(PinStoreTestingError) {
        let index = X509_get_ext_by_NID(pointer, nid, -1)
        guard index >= 0, let removed = X509_delete_ext(pointer, index) else {
            throw OpenSSLErrors.error("remove the extension \(Self.shortName(nid))")
        }
        X509_EXTENSION_free(removed)
    }

    /// The TBSCertificate as it is now, re-encoded (`i2d_re_X509_tbs`, so a removed extension
    /// is gone from it): what a CT log signs for a precertificate once its poison is removed.
    func reencodedTBS() throws(PinStoreTestingError) -> Data {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_re_X509_tbs(pointer, &out)
        guard length > 0, let out else { throw OpenSSLErrors.error("re-encode the TBSCertificate") }
        defer { CPinStoreShims_OPENSSL_free(out) }
        return Data(bytes: out, count: Int(length))
    }

    /// Appends `list` as the embedded SCT list extension (OpenSSL encodes it), even when the
    /// certificate already has one (for the duplicated-extension test).
    func addSCTList(_ list: OwnedSCTList) throws(PinStoreTestingError) {
        guard X509_add1_ext_i2d(pointer, NID_ct_precert_scts, UnsafeMutableRawPointer(list.pointer), 0, UInt(X509V3_ADD_APPEND)) == 1 else {
            throw OpenSSLErrors.error("add the embedded SCT list")
        }
    }

    /// Appends a copy of `other`'s first extension `nid`.
    func copyExtension(_ nid: Int32, from other: OwnedCertificate) throws(PinStoreTestingError) {
        let index = X509_get_ext_by_NID(other.pointer, nid, -1)
        guard index >= 0, let found = X509_get_ext(other.pointer, index), X509_add_ext(pointer, found, -1) == 1 else {
            throw OpenSSLErrors.error("copy the extension \(Self.shortName(nid)) from another certificate")
        }
    }

    /// Appends extension `nid` with `value` as its extnValue, unchecked (for malformed-input tests).
    func addRawExtension(_ nid: Int32, value: Data) throws(PinStoreTestingError) {
        guard let octets = ASN1_OCTET_STRING_new() else { throw OpenSSLErrors.error("allocate an OCTET STRING") }
        defer { ASN1_OCTET_STRING_free(octets) }
        let set = value.withUnsafeBytes { raw in
            ASN1_OCTET_STRING_set(octets, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(clamping: raw.count))
        }
        guard set == 1, let made = X509_EXTENSION_create_by_NID(nil, nid, 0, octets) else {
            throw OpenSSLErrors.error("make a raw \(Self.shortName(nid)) extension")
        }
        let certificateExtension = OwnedExtension(taking: made)
        let added = withExtendedLifetime(certificateExtension) { X509_add_ext(pointer, certificateExtension.pointer, -1) }
        guard added == 1 else { throw OpenSSLErrors.error("add a raw \(Self.shortName(nid)) extension") }
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

/// Owns one `STACK_OF(SCT)` being built for a test certificate, and frees it (with its SCTs)
/// with the object.
final class OwnedSCTList {
    let pointer: OpaquePointer

    /// An empty list.
    init() throws(PinStoreTestingError) {
        guard let list = CPinStoreShims_sk_SCT_new_null() else { throw OpenSSLErrors.error("allocate an SCT list") }
        pointer = list
    }

    deinit {
        CPinStoreShims_sk_SCT_pop_free(pointer)
    }

    /// Appends a v1 precertificate SCT made with OpenSSL's setters.
    func append(logID: Data, timestamp: UInt64, extensions: Data, signatureNID: Int32, signature: Data) throws(PinStoreTestingError) {
        guard let sct = SCT_new() else { throw OpenSSLErrors.error("allocate an SCT") }
        var ok = SCT_set_version(sct, SCT_VERSION_V1) == 1 && SCT_set_log_entry_type(sct, CT_LOG_ENTRY_TYPE_PRECERT) == 1
        ok = ok && logID.withUnsafeBytes { SCT_set1_log_id(sct, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) == 1 }
        SCT_set_timestamp(sct, timestamp)
        if ok, !extensions.isEmpty {
            ok = extensions.withUnsafeBytes { SCT_set1_extensions(sct, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) == 1 }
        }
        ok = ok && SCT_set_signature_nid(sct, signatureNID) == 1
        ok = ok && signature.withUnsafeBytes { SCT_set1_signature(sct, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) == 1 }
        guard ok, CPinStoreShims_sk_SCT_push(pointer, sct) > 0 else {
            SCT_free(sct)
            throw OpenSSLErrors.error("fill in an SCT")
        }
    }
}
