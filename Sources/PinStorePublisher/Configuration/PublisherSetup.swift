import Foundation
import PinStore

/// The publication file with every file it names read and checked: signers, the keys clients
/// trust, each partner's trust roots and allowed CAs, the CT section and key documents. Made
/// once at start-up, so a missing or unreadable file stops the publisher before it probes.
package struct PublisherSetup: Sendable {
    package let file: PublicationFile
    /// This publisher's signers, in file order; the first makes the per-entry signatures.
    package let signers: [any ListSigner]
    /// The keys clients trust for lists, and how many must sign.
    package let trustedKeys: [P256PublicKey]
    package let threshold: Int
    /// Keys whose signature approves a staged change on this publisher (approvers and every
    /// list key: the operator of a lone publisher approves with its own key).
    package let approverKeys: [P256PublicKey]
    /// Keys whose approval a co-signer honours in another vantage point's proposal: the
    /// publication file's `approverKeys` only. A list key never counts here, or one compromised
    /// vantage point could approve its own pins.
    package let peerApprovalKeys: [P256PublicKey]
    /// The partners as the rules and the probe see them.
    package let partners: [PublicationRules.Partner]
    package let trustRoots: [String: TrustRoots]
    /// The CT section (the JSON a list carries), when configured.
    package let certificateTransparencySection: Data?
    /// The `revocations` section every list carries (empty when none is configured).
    package let revocations: [ListRevocations.Wire]
    /// The `crl` section every list carries (nil when none is configured).
    package let crl: CRLHostList.Wire?
    /// The key document file, when configured.
    package let keyDocuments: Data?

    /// Reads everything `file` names.
    package init(file: PublicationFile) throws(PublisherError) {
        self.file = file
        var signers: [any ListSigner] = []
        for (index, key) in file.signingKeys.enumerated() {
            if let path = key.file {
                signers.append(try KeyFileSigner(contentsOf: file.resolve(path)))
            } else if let command = key.command, let publicKey = key.publicKey {
                let resolved = command[0].hasPrefix("./") || command[0].hasPrefix("../") ? [file.resolve(command[0]).path] + command.dropFirst() : command
                signers.append(CommandSigner(arguments: resolved, publicKey: try Self.publicKey(publicKey, file: file, at: "signingKeys[\(index)].publicKey"),
                                             timeout: file.signingCommandTimeout.seconds))
            }
        }
        self.signers = signers
        var others: [P256PublicKey] = []
        for (index, text) in file.otherPublisherKeys.enumerated() {
            others.append(try Self.publicKey(text, file: file, at: "otherPublisherKeys[\(index)]"))
        }
        var approvers: [P256PublicKey] = []
        for (index, text) in file.approverKeys.enumerated() {
            approvers.append(try Self.publicKey(text, file: file, at: "approverKeys[\(index)]"))
        }
        var keys: [P256PublicKey] = []
        var seen = Set<String>()
        for key in signers.map(\.publicKey) + others where seen.insert(KeyDocumentTools.keyID(of: key)).inserted {
            keys.append(key)
        }
        var threshold = file.threshold
        if let path = file.keyDocuments {
            let chain = try Self.read(file.resolve(path), what: "keyDocuments")
            do {
                let newest = try KeyDocumentTools.newestKeys(chain, now: Date())
                keys = newest.keys
                threshold = newest.threshold
            } catch {
                throw PublisherError(.unreadableReference, "keyDocuments \(path) does not verify: \(error.reason)")
            }
            self.keyDocuments = chain
        } else {
            self.keyDocuments = nil
        }
        guard threshold <= keys.count else {
            throw PublisherError(.invalidPublicationFile, "\"threshold\" \(threshold) is more than the \(keys.count) distinct list keys (signingKeys and otherPublisherKeys); no list could ever be published.")
        }
        let keyIDs = Set(keys.map { KeyDocumentTools.keyID(of: $0) })
        for signer in signers where !keyIDs.contains(signer.keyID) {
            throw PublisherError(.invalidPublicationFile, "The signing key \(signer.keyID.prefix(16)) is not in the key document in force; clients would not count its signature.")
        }
        self.trustedKeys = keys
        self.threshold = threshold
        self.approverKeys = approvers + keys
        self.peerApprovalKeys = approvers
        var partners: [PublicationRules.Partner] = []
        var roots: [String: TrustRoots] = [:]
        for (index, partner) in file.partners.enumerated() {
            var allowed = Set<String>()
            for (caIndex, ca) in partner.allowedCAs.enumerated() {
                if let digest = Data(base64Encoded: ca), digest.count == 32 {
                    allowed.insert(ca)
                    continue
                }
                let data = try Self.read(file.resolve(ca), what: "partners[\(index)].allowedCAs[\(caIndex)]")
                do {
                    let certificates = try X509Certificate.certificates(fileContents: data)
                    allowed.formUnion(certificates.map(\.spkiSHA256Base64))
                } catch {
                    throw PublisherError(.unreadableReference, "partners[\(index)].allowedCAs[\(caIndex)] \(ca) is neither a Base64 SPKI SHA-256 nor a certificate file: \(error.reason)")
                }
            }
            partners.append(PublicationRules.Partner(entry: partner, allowedCAs: allowed))
            if partner.anchors == "system" {
                roots[partner.id] = .system
            } else {
                let data = try Self.read(file.resolve(partner.anchors), what: "partners[\(index)].anchors")
                do {
                    roots[partner.id] = try TrustRoots.anchors(pem: String(decoding: data, as: UTF8.self))
                } catch {
                    throw PublisherError(.unreadableReference, "partners[\(index)].anchors \(partner.anchors) holds no usable PEM certificate: \(error.reason)")
                }
            }
        }
        self.partners = partners
        self.trustRoots = roots
        if let path = file.certificateTransparencySection {
            let data = try Self.read(file.resolve(path), what: "certificateTransparencySection")
            do {
                self.certificateTransparencySection = try CertificateTransparencyTools.checkedSection(data)
            } catch {
                throw PublisherError(.unreadableReference, "certificateTransparencySection \(path) is not a section a store accepts: \(error.reason)")
            }
        } else {
            self.certificateTransparencySection = nil
        }
        if let path = file.revocations {
            let data = try Self.read(file.resolve(path), what: "revocations")
            do {
                self.revocations = try ListRevocations.checkedSection(data)
            } catch {
                throw PublisherError(.unreadableReference, "revocations \(path) is not a section a store accepts: \(error.reason)")
            }
        } else {
            self.revocations = []
        }
        if let path = file.crl {
            let data = try Self.read(file.resolve(path), what: "crl")
            do {
                self.crl = try CRLHostList.checkedSection(data)
            } catch {
                throw PublisherError(.unreadableReference, "crl \(path) is not a section a store accepts: \(error.reason)")
            }
        } else {
            self.crl = nil
        }
    }

    /// The probe target of a partner.
    package func target(for partner: PublicationFile.Partner) -> ProbeTarget {
        ProbeTarget(host: partner.host, port: partner.port, serverName: partner.sni, trustRoots: trustRoots[partner.id] ?? .system)
    }

    /// Reads a public key from a file (PEM or DER SubjectPublicKeyInfo, or X9.63) or takes
    /// Base64 given inline (public keys are not secrets).
    static func publicKey(_ text: String, file: PublicationFile, at path: String) throws(PublisherError) -> P256PublicKey {
        let url = file.resolve(text)
        if FileManager.default.fileExists(atPath: url.path) {
            let data = try read(url, what: path)
            do {
                if let pem = String(data: data, encoding: .utf8), pem.contains("-----BEGIN") {
                    if pem.contains("PRIVATE KEY") {
                        throw PublisherError(.inlineKeyMaterial, "\(path) \(text) is a private key; give the public half (`pinstore keygen` writes both).")
                    }
                    return try P256PublicKey(pem: pem)
                }
                return try P256PublicKey(derSubjectPublicKeyInfo: data)
            } catch let error as PinStoreError {
                throw PublisherError(.unreadableReference, "\(path) \(text) is not a P-256 public key: \(error.reason)")
            } catch let error as PublisherError {
                throw error
            } catch {
                throw PublisherError(.unreadableReference, "\(path) \(text) is not a P-256 public key.")
            }
        }
        do {
            return try P256PublicKey(configuredString: text)
        } catch {
            throw PublisherError(.unreadableReference, "\(path) \(text) is neither a readable key file nor a Base64 P-256 public key: \(error.reason)")
        }
    }

    static func read(_ url: URL, what: String) throws(PublisherError) -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw PublisherError(.unreadableReference, "\(what): \(url.path) cannot be read: \(error.localizedDescription)")
        }
    }
}
