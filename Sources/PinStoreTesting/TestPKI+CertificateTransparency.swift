import Foundation
import PinStore
internal import COpenSSL

extension TestPKI {
    /// Issues a leaf from ``intermediate`` with SCTs embedded, as a CA does for a publicly
    /// trusted certificate (RFC 6962 §3.1): a precertificate with the critical poison
    /// extension, an SCT from each log over it, then the final leaf with the same contents, minus
    /// the poison, plus the SCT list extension.
    ///
    /// ```swift
    /// let log = try TestCTLog()
    /// let leaf = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: log)])
    /// let flipped = try pki.issueLeaf(for: ["localhost"], embedding: [TestSCT(log: log)],
    ///                                 corruption: .flipSignatureByte(sctIndex: 0))
    /// ```
    ///
    /// - Parameters:
    ///   - names: The DNS names (the first is also the common name).
    ///   - validity: When the leaf is valid; ``validity`` when nil.
    ///   - scts: The SCTs to embed, in order. Empty embeds an empty list.
    ///   - corruption: A defect to build in, or nil for a well-formed leaf.
    /// - Throws: ``PinStoreTestingError`` when a name is unusable, an SCT index is out of range,
    ///   or an OpenSSL call fails.
    public func issueLeaf(for names: [String], validity: DateInterval? = nil, embedding scts: [TestSCT],
                          corruption: TestSCTCorruption? = nil) throws(PinStoreTestingError) -> TestIdentity {
        try Self.checkNames(names)
        if case .flipSignatureByte(let index)? = corruption?.backing, !scts.indices.contains(index) {
            throw PinStoreTestingError("There is no SCT \(index) to corrupt: the leaf embeds \(scts.count).")
        }
        let key = try CertificateKey()
        let builder = try issuer.leafBuilder(names: names, validity: validity ?? self.validity, key: key)
        let issuerCertificate = try OwnedCertificate(der: issuer.certificate.derRepresentation)
        // The precertificate a CA submits to logs: the poison makes it unusable as a certificate.
        try builder.addExtension(NID_ct_precert_poison, "critical,NULL", issuer: issuerCertificate)
        try builder.sign(with: issuer.key)
        // Logs sign the precertificate's TBS without its poison, which is the final leaf's TBS
        // without its SCT list (both are the last extension).
        try builder.deleteExtension(NID_ct_precert_poison)
        let tbs = try builder.reencodedTBS()
        let issuerKeyHash = SHA256Digest.hash(issuer.certificate.subjectPublicKeyInfo)

        let list = try OwnedSCTList()
        for (index, sct) in scts.enumerated() {
            let extensions = sct.log.sctExtensions(leafIndex: sct.leafIndex)
            guard let signed = PrecertificateSignatureInput.bytes(timestamp: sct.timestampMilliseconds, issuerKeyHash: issuerKeyHash,
                                                                  tbsCertificate: tbs, extensions: extensions) else {
                throw PinStoreTestingError("The leaf's TBSCertificate or the SCT extensions are too long for an SCT.")
            }
            var signature = try sct.log.key.signature(for: signed)
            if case .flipSignatureByte(index)? = corruption?.backing, let last = signature.indices.last {
                signature[last] ^= 0x01
            }
            let nid = sct.log.keyType == .p256 ? NID_ecdsa_with_SHA256 : NID_sha256WithRSAEncryption
            try list.append(logID: sct.log.logID, timestamp: sct.timestampMilliseconds, extensions: extensions,
                            signatureNID: nid, signature: signature)
        }

        switch corruption?.backing {
        case .sctListCopied(let other):
            try builder.copyExtension(NID_ct_precert_scts, from: try OwnedCertificate(der: other.derRepresentation))
        case .duplicatedExtension:
            try builder.addSCTList(list)
            try builder.addSCTList(list)
        case .rawExtensionValue(let value):
            try builder.addRawExtension(NID_ct_precert_scts, value: value)
        case .flipSignatureByte, nil:
            try builder.addSCTList(list)
        }
        try builder.sign(with: issuer.key)
        return try issuer.identity(builder, key: key)
    }
}
