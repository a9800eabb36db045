import Foundation
import PinStore
internal import COpenSSL

extension TestPKI {
    /// A CA of a ``TestPKI`` that signs CRLs.
    public enum CRLIssuer: Sendable, Hashable {
        /// The root: its CRL may revoke ``TestPKI/intermediate``.
        case root
        /// The intermediate: its CRL may revoke the leaves.
        case intermediate
        /// The impostor's root, an unrelated CA: its CRL is "from another issuer".
        case impostor
    }

    /// Where the leaves' CRL is published (`<crlBaseURL>/intermediate.crl`); nil without a base URL.
    public var intermediateCRLURL: URL? { issuer.crlURL }
    /// Where the intermediate's CRL is published (`<crlBaseURL>/root.crl`); nil without a base URL.
    public var rootCRLURL: URL? { rootAuthority.crlURL }

    /// A DER CRL (v2) signed by `issuer`, listing `revoked` (revoked at `thisUpdate`).
    ///
    /// ```swift
    /// let pki = try TestPKI(hosts: ["localhost"], crlBaseURL: server.baseURL)
    /// let crl = try pki.crl(by: .intermediate, revoking: [pki.leaf.certificate])
    /// ```
    ///
    /// - Parameters:
    ///   - issuer: The CA whose name and key sign the CRL.
    ///   - revoked: The certificates listed (by serial number).
    ///   - thisUpdate: When the CRL was made; a minute ago by default.
    ///   - nextUpdate: Until when it is current; a week from now by default (in the past for an
    ///     expired CRL).
    ///   - otherEntries: That many more entries, serials 1 to `otherEntries`, which no kit
    ///     certificate has (the kit's serials are random 63-bit numbers): a large CRL.
    public func crl(by issuer: CRLIssuer, revoking revoked: [X509Certificate] = [], thisUpdate: Date = Date().addingTimeInterval(-60),
                    nextUpdate: Date = Date().addingTimeInterval(7 * 86_400), otherEntries: Int = 0) throws(PinStoreTestingError) -> Data {
        let authority: Authority
        switch issuer {
        case .root: authority = rootAuthority
        case .intermediate: authority = self.issuer
        case .impostor: authority = impostorAuthority
        }
        return try authority.signCRL(revoking: revoked, thisUpdate: thisUpdate, nextUpdate: nextUpdate, otherEntries: otherEntries)
    }
}

extension Authority {
    /// A CRL in this CA's name, signed with its key.
    func signCRL(revoking revoked: [X509Certificate], thisUpdate: Date, nextUpdate: Date, otherEntries: Int = 0) throws(PinStoreTestingError) -> Data {
        guard let crl = X509_CRL_new() else { throw OpenSSLErrors.error("allocate a CRL") }
        defer { X509_CRL_free(crl) }
        let ca = try OwnedCertificate(der: certificate.derRepresentation)
        guard X509_CRL_set_version(crl, 1) == 1, X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca.pointer)) == 1 else {
            throw OpenSSLErrors.error("set the CRL's version and issuer")
        }
        guard let last = ASN1_TIME_set(nil, time_t(thisUpdate.timeIntervalSince1970)),
              let next = ASN1_TIME_set(nil, time_t(nextUpdate.timeIntervalSince1970)) else {
            throw OpenSSLErrors.error("make the CRL's dates")
        }
        defer {
            ASN1_TIME_free(last)
            ASN1_TIME_free(next)
        }
        guard X509_CRL_set1_lastUpdate(crl, last) == 1, X509_CRL_set1_nextUpdate(crl, next) == 1 else {
            throw OpenSSLErrors.error("set the CRL's dates")
        }
        for certificate in revoked {
            let owned = try OwnedCertificate(der: certificate.derRepresentation)
            guard let entry = X509_REVOKED_new() else { throw OpenSSLErrors.error("allocate a CRL entry") }
            guard X509_REVOKED_set_serialNumber(entry, X509_get_serialNumber(owned.pointer)) == 1,
                  X509_REVOKED_set_revocationDate(entry, last) == 1,
                  X509_CRL_add0_revoked(crl, entry) == 1 else {
                X509_REVOKED_free(entry)
                throw OpenSSLErrors.error("add a CRL entry")
            }
        }
        if otherEntries > 0 {
            for serial in 1...otherEntries {
                guard let entry = X509_REVOKED_new() else { throw OpenSSLErrors.error("allocate a CRL entry") }
                guard let number = ASN1_INTEGER_new() else {
                    X509_REVOKED_free(entry)
                    throw OpenSSLErrors.error("allocate a serial number")
                }
                defer { ASN1_INTEGER_free(number) }
                guard ASN1_INTEGER_set(number, serial) == 1, X509_REVOKED_set_serialNumber(entry, number) == 1,
                      X509_REVOKED_set_revocationDate(entry, last) == 1, X509_CRL_add0_revoked(crl, entry) == 1 else {
                    X509_REVOKED_free(entry)
                    throw OpenSSLErrors.error("add a CRL entry")
                }
            }
        }
        guard X509_CRL_sort(crl) == 1, X509_CRL_sign(crl, key.pointer, EVP_sha256()) > 0 else {
            throw OpenSSLErrors.error("sign the CRL")
        }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_CRL(crl, &out)
        guard length > 0, let out else { throw OpenSSLErrors.error("encode the CRL as DER") }
        defer { free(out) }
        return Data(bytes: out, count: Int(length))
    }
}
