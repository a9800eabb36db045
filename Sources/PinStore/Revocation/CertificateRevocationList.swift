import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// A complete CRL that OpenSSL parsed and verified against the issuer taken from a validated
/// chain: its signature, its issuer's name and `cRLSign` right, its dates and its scope. What
/// the CRL check keeps of it is a value (the revoked serials and the dates), so nothing of
/// OpenSSL outlives ``init(der:url:issuer:issuerKey:now:)``.
struct CertificateRevocationList: Sendable {
    /// The CRL as served (for the storage folder, and to verify it for another issuer).
    let der: Data
    /// SHA-256 of the SPKI of the issuer it was verified with.
    let issuerKey: Digest32
    /// `thisUpdate` and `nextUpdate`, Unix seconds.
    let thisUpdate: Int64
    let nextUpdate: Int64
    /// Revocation dates (Unix seconds) by serial number (the DER INTEGER, as the certificate's).
    let revoked: [Data: Int64]
    /// What the issuing distribution point limits the CRL to.
    let covers: Coverage

    enum Coverage: Sendable, Equatable {
        case allCertificates, endEntitiesOnly, authoritiesOnly
    }

    /// How far a `thisUpdate` may be in the future (clock skew between the CA and us).
    static let clockSkew: Int64 = 300

    /// Parses `der` (fetched from `url`) and verifies it for certificates issued by `issuer`
    /// (DER, from the validated chain, whose SPKI's SHA-256 is `issuerKey`) at `now` (Unix seconds).
    init(der: Data, url: String, issuer: Data, issuerKey: Digest32, now: Int64) throws(CRLUnavailable) {
        func refuse(_ code: CRLUnavailable.Code, _ why: String) -> CRLUnavailable { CRLUnavailable(code, url: url, why) }
        guard der.first == 0x30, let crl = Self.parse(der) else {
            OpenSSLErrorQueue.clear()
            throw refuse(.malformed, "the \(der.count) bytes are not exactly one DER CRL")
        }
        defer { X509_CRL_free(crl) }
        let issuerHandle: X509Handle
        do {
            issuerHandle = try X509Handle(der: issuer)
        } catch {
            throw refuse(.wrongIssuer, "the issuer certificate could not be read")
        }
        guard X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(issuerHandle.pointer)) == 0 else {
            throw refuse(.wrongIssuer, "the CRL is signed in the name of another issuer than the certificate's")
        }
        // keyUsage absent: every use allowed (X509_get_key_usage answers all bits).
        guard X509_get_key_usage(issuerHandle.pointer) & UInt32(KU_CRL_SIGN) != 0 else {
            throw refuse(.wrongIssuer, "the issuer's keyUsage does not allow cRLSign")
        }
        guard let key = X509_get0_pubkey(issuerHandle.pointer), X509_CRL_verify(crl, key) == 1 else {
            OpenSSLErrorQueue.clear()
            throw refuse(.badSignature, "the signature does not verify with the issuer's key from the validated chain")
        }
        guard let thisUpdate = X509Handle.seconds(X509_CRL_get0_lastUpdate(crl)) else {
            throw refuse(.badDates, "thisUpdate cannot be read")
        }
        guard let nextUpdate = X509Handle.seconds(X509_CRL_get0_nextUpdate(crl)) else {
            throw refuse(.badDates, "the CRL has no nextUpdate, so nothing says until when it is current")
        }
        guard thisUpdate <= now + Self.clockSkew, thisUpdate < nextUpdate else {
            throw refuse(.badDates, "thisUpdate \(thisUpdate) is in the future or not before nextUpdate \(nextUpdate)")
        }
        guard nextUpdate > now else {
            throw refuse(.expired, "nextUpdate \(nextUpdate) has passed (now \(now))")
        }
        covers = try Self.coverage(crl, url: url)
        let revoked = try Self.revokedEntries(crl, url: url, thisUpdate: thisUpdate)
        self.der = der
        self.issuerKey = issuerKey
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
        self.revoked = revoked
    }

    /// Revocation dates (Unix seconds) by serial number; `thisUpdate` for an entry whose date
    /// cannot be read.
    private static func revokedEntries(_ crl: OpaquePointer, url: String, thisUpdate: Int64) throws(CRLUnavailable) -> [Data: Int64] {
        func refuse(_ code: CRLUnavailable.Code, _ why: String) -> CRLUnavailable { CRLUnavailable(code, url: url, why) }
        var revoked: [Data: Int64] = [:]
        guard let entries = X509_CRL_get_REVOKED(crl) else { return revoked }
        let count = CPinStoreShims_sk_X509_REVOKED_num(entries)
        revoked.reserveCapacity(Int(max(0, count)))
        for index in 0..<max(0, count) {
            guard let entry = CPinStoreShims_sk_X509_REVOKED_value(entries, index) else { continue }
            // A critical entry extension (certificateIssuer above all: an indirect CRL)
            // changes what the entry means; refuse rather than misread it.
            for extensionIndex in 0..<max(0, X509_REVOKED_get_ext_count(entry)) {
                if let ext = X509_REVOKED_get_ext(entry, extensionIndex), X509_EXTENSION_get_critical(ext) != 0 {
                    throw refuse(.scopeUnsupported, "entry \(index + 1) has a critical extension (\(name(ext))); indirect CRLs are not read")
                }
            }
            guard let serial = integerDER(X509_REVOKED_get0_serialNumber(entry)) else {
                throw refuse(.malformed, "entry \(index + 1) has no readable serial number")
            }
            revoked[serial] = X509Handle.seconds(X509_REVOKED_get0_revocationDate(entry)) ?? thisUpdate
        }
        return revoked
    }

    /// Everything read from `der` without an issuer (the fuzz target's view of the parser):
    /// the scope and the entries, or why they were refused. nil when it is not one DER CRL.
    static func readUnverified(_ der: Data) -> Result<(Coverage, Int), CRLUnavailable>? {
        guard der.first == 0x30, let crl = parse(der) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { X509_CRL_free(crl) }
        _ = X509Handle.seconds(X509_CRL_get0_nextUpdate(crl))
        do throws(CRLUnavailable) {
            let coverage = try coverage(crl, url: "fuzz")
            return .success((coverage, try revokedEntries(crl, url: "fuzz", thisUpdate: 0).count))
        } catch {
            return .failure(error)
        }
    }

    /// `nextUpdate` (Unix seconds) of `der`, unverified: what the storage folder's sweep
    /// (``CRLChecker/sweep(now:)``) needs to know that a stored CRL is of no use to anyone
    /// any more. Never used to trust a CRL. nil when `der` is not one DER CRL with a `nextUpdate`.
    static func nextUpdateUnverified(_ der: Data) -> Int64? {
        guard der.first == 0x30, let crl = parse(der) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { X509_CRL_free(crl) }
        return X509Handle.seconds(X509_CRL_get0_nextUpdate(crl))
    }

    /// `thisUpdate` (Unix seconds) of `der`, unverified: for tests of committed seeds, which
    /// are judged at their own time.
    static func thisUpdateForTests(_ der: Data) -> Int64? {
        guard let crl = parse(der) else { return nil }
        defer { X509_CRL_free(crl) }
        return X509Handle.seconds(X509_CRL_get0_lastUpdate(crl))
    }

    /// The CRL's extensions judged: a delta CRL and unknown critical extensions refused, the
    /// issuing distribution point read for its scope.
    private static func coverage(_ crl: OpaquePointer, url: String) throws(CRLUnavailable) -> Coverage {
        for index in 0..<max(0, X509_CRL_get_ext_count(crl)) {
            guard let ext = X509_CRL_get_ext(crl, index) else { continue }
            let nid = OBJ_obj2nid(X509_EXTENSION_get_object(ext))
            if nid == NID_delta_crl {
                throw CRLUnavailable(.deltaCRLUnsupported, url: url, "a delta CRL; PinStore reads complete CRLs only")
            }
            if X509_EXTENSION_get_critical(ext) != 0, nid != NID_issuing_distribution_point {
                throw CRLUnavailable(.unsupportedCriticalExtension, url: url, "the critical extension \(name(ext)) is not known")
            }
        }
        var critical: Int32 = 0
        guard let raw = X509_CRL_get_ext_d2i(crl, NID_issuing_distribution_point, &critical, nil) else {
            if critical == -2 {
                throw CRLUnavailable(.malformed, url: url, "the issuing distribution point appears twice")
            }
            if critical >= 0 {
                OpenSSLErrorQueue.clear()
                throw CRLUnavailable(.malformed, url: url, "the issuing distribution point cannot be read")
            }
            return .allCertificates
        }
        let point = raw.assumingMemoryBound(to: ISSUING_DIST_POINT.self)
        defer { ISSUING_DIST_POINT_free(point) }
        let idp = point.pointee
        if idp.indirectCRL != 0 || idp.onlysomereasons != nil || idp.onlyattr != 0 {
            throw CRLUnavailable(.scopeUnsupported, url: url, "an indirect CRL, or one for some reasons or attribute certificates only")
        }
        // A partitioned CRL (Let's Encrypt's shards) names its own URL: a CRL served for one
        // distribution point must be that partition, not another one of the same CA (in which
        // the certificate would simply be absent).
        if let name = idp.distpoint, name.pointee.type == 0, let names = name.pointee.name.fullname {
            let uris = uniformResourceIdentifiers(names)
            if !uris.isEmpty, !uris.contains(url) {
                throw CRLUnavailable(.outOfScope, url: url, "the CRL is the partition \(uris.joined(separator: ", ")), not the one named by the certificate")
            }
        }
        if idp.onlyuser != 0 { return .endEntitiesOnly }
        if idp.onlyCA != 0 { return .authoritiesOnly }
        return .allCertificates
    }

    private static func parse(_ der: Data) -> OpaquePointer? {
        der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let crl = d2i_X509_CRL(nil, &cursor, raw.count) else { return nil }
            guard cursor == base + raw.count else {
                X509_CRL_free(crl)
                return nil
            }
            return crl
        }
    }

    /// The DER of an INTEGER (a serial number), the key the revoked serials are kept under.
    static func integerDER(_ integer: UnsafePointer<ASN1_INTEGER>?) -> Data? {
        guard let integer else { return nil }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ASN1_INTEGER(integer, &out)
        guard length > 0, let out else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { openSSLFree(out) }
        return Data(bytes: out, count: Int(length))
    }

    /// The URIs among `names` (`GENERAL_NAMES`).
    static func uniformResourceIdentifiers(_ names: OpaquePointer) -> [String] {
        var uris: [String] = []
        for index in 0..<max(0, CPinStoreShims_sk_GENERAL_NAME_num(names)) {
            guard let name = CPinStoreShims_sk_GENERAL_NAME_value(names, index) else { continue }
            var type: Int32 = 0
            guard let value = GENERAL_NAME_get0_value(name, &type), type == GEN_URI else { continue }
            let string = value.assumingMemoryBound(to: ASN1_STRING.self)
            guard let bytes = ASN1_STRING_get0_data(string) else { continue }
            uris.append(String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(string))), as: UTF8.self))
        }
        return uris
    }

    private static func name(_ ext: OpaquePointer) -> String {
        let nid = OBJ_obj2nid(X509_EXTENSION_get_object(ext))
        guard nid != NID_undef, let short = OBJ_nid2sn(nid) else { return "unknown OID" }
        return String(cString: short)
    }
}

/// What the CRL check needs of one certificate: where its CA publishes CRLs (http only), its
/// serial number and whether it is a CA. Read once per certificate (cached by its SHA-256).
struct CRLSubject: Sendable {
    /// The http distribution points, in the certificate's order.
    let urls: [URL]
    /// The serial number (DER INTEGER).
    let serial: Data
    let isAuthority: Bool

    private static let cache = Locked<[Digest32: CRLSubject]>([:])
    private static let cacheLimit = 4_096

    /// Distribution points read per certificate, in the certificate's order, duplicates
    /// dropped. Public CAs name one or two (a second host as a mirror); any of them serves the
    /// issuer's whole CRL, so the rest add nothing but requests. Whoever issued the certificate
    /// chooses them, and a leaf naming a thousand made a thousand fetches at once.
    static let maximumDistributionPoints = 4

    /// Forgets every certificate read (the benchmark of a new chain).
    static func forgetAll() {
        cache.withLock { $0.removeAll() }
    }

    /// The subject of `der` (whose SHA-256 is `fingerprint`); nil when it cannot be read.
    static func of(_ der: Data, fingerprint: Digest32) -> CRLSubject? {
        if let known = cache.withLock({ $0[fingerprint] }) { return known }
        guard let subject = read(der) else { return nil }
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[fingerprint] = subject
        }
        return subject
    }

    /// The subject of `der`, read by OpenSSL (uncached); nil when it is not a certificate.
    static func read(_ der: Data) -> CRLSubject? {
        guard der.first == 0x30, let handle = try? X509Handle(der: der),
              let serial = CertificateRevocationList.integerDER(X509_get0_serialNumber(handle.pointer)) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return CRLSubject(urls: distributionPoints(handle), serial: serial, isAuthority: X509_check_ca(handle.pointer) != 0)
    }

    /// The `http:` full names of the certificate's CRL distribution points, the first
    /// ``maximumDistributionPoints`` distinct ones. Points that name a CRL issuer (indirect
    /// CRLs) or limit the reasons are left out: they cannot stand for the whole CRL of the
    /// certificate's issuer.
    private static func distributionPoints(_ handle: X509Handle) -> [URL] {
        guard let raw = X509_get_ext_d2i(handle.pointer, NID_crl_distribution_points, nil, nil) else {
            OpenSSLErrorQueue.clear()
            return []
        }
        let points = OpaquePointer(raw)
        defer { CRL_DIST_POINTS_free(points) }
        var urls: [URL] = []
        var seen: Set<String> = []
        for index in 0..<max(0, CPinStoreShims_sk_DIST_POINT_num(points)) where urls.count < maximumDistributionPoints {
            guard let point = CPinStoreShims_sk_DIST_POINT_value(points, index), point.pointee.CRLissuer == nil,
                  point.pointee.reasons == nil, let name = point.pointee.distpoint, name.pointee.type == 0,
                  let names = name.pointee.name.fullname else { continue }
            for text in CertificateRevocationList.uniformResourceIdentifiers(names) where urls.count < maximumDistributionPoints {
                // http only: a CRL is signed, and https would need a CRL check of its own.
                guard let url = URL(string: text), url.scheme?.lowercased() == "http", url.host != nil,
                      seen.insert(url.absoluteString).inserted else { continue }
                urls.append(url)
            }
        }
        return urls
    }
}
