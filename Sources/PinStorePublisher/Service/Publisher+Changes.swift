import Foundation
import PinStore
import PinStoreSigning

extension Publisher {
    /// Pins the key `spkiSHA256` (Base64 SHA-256 of a SubjectPublicKeyInfo) for `partnerID`
    /// before it is deployed: it goes into the next list as a key pin, until `expires`
    /// (`announcementLifetime` from now by default), so clients accept the partner's next
    /// certificate from its first second. The operator's explicit act: no K, T or CA rule applies.
    package func announce(partnerID: String, spkiSHA256: String, expires: Date? = nil) throws(PublisherError) {
        guard setup.partners.contains(where: { $0.entry.id == partnerID }) else {
            throw PublisherError(.invalidAnnouncement, "No partner has id \(String(reflecting: partnerID)); announce for a partner of the publication file.")
        }
        guard let digest = Data(base64Encoded: spkiSHA256), digest.count == 32 else {
            throw PublisherError(.invalidAnnouncement, "\(String(reflecting: spkiSHA256)) is not the Base64 of a SHA-256 (32 bytes).")
        }
        let now = clock.now()
        state.announcements.removeAll { $0.partnerID == partnerID && $0.spkiSHA256 == spkiSHA256 }
        state.announcements.append(PublisherState.Announcement(partnerID: partnerID, spkiSHA256: spkiSHA256, announcedAt: now,
                                                               expires: expires ?? now.addingTimeInterval(setup.file.announcementLifetime.seconds)))
        save()
        logger.info("a key is announced", metadata: ["pinstore.partner": "\(partnerID)", "pinstore.spki": "\(spkiSHA256)"])
    }

    /// The Base64 SHA-256 of the SubjectPublicKeyInfo in a PEM file: a public key, a private
    /// key (its public half; the private key is not kept) or a certificate.
    package static func spkiSHA256(ofKeyPEM pem: String) throws(PublisherError) -> String {
        if pem.contains("PRIVATE KEY") {
            guard let key = try? P256PrivateKey(pem: pem).publicKey.derRepresentation else {
                throw PublisherError(.invalidAnnouncement, "The private key PEM cannot be read (an unencrypted P-256 PKCS#8 or EC key is needed; give the public key instead).")
            }
            return SHA256Digest.hash(key).base64EncodedString()
        }
        if pem.contains("BEGIN CERTIFICATE"), let certificate = try? X509Certificate.certificates(pem: pem).first {
            return certificate.spkiSHA256Base64
        }
        guard pem.contains("BEGIN PUBLIC KEY"), let der = try? CertificateTransparencyTools.subjectPublicKeyInfo(fromFile: Data(pem.utf8)) else {
            throw PublisherError(.invalidAnnouncement, "No PUBLIC KEY, PRIVATE KEY or CERTIFICATE block was found in the PEM.")
        }
        return SHA256Digest.hash(der).base64EncodedString()
    }

    /// Staged changes, waiting ones included (``StagedChange/needsPerson`` tells them apart).
    package func pending() -> [StagedChange] {
        plan(at: clock.now()).staged
    }

    /// Approves staged change `changeID` with `signer`'s key, which must be an approver key or
    /// a list key: its signature over the change is kept (and carried by proposals, so other
    /// vantage points can check it), and the change's pin goes into the next list. A person is
    /// just another key here. Runs a cycle at once, so a single publisher publishes right away.
    ///
    /// - Throws: ``PublisherError/Code/unknownChange``, ``PublisherError/Code/untrustedApprover``,
    ///   or ``PublisherError/Code/signingFailed``.
    package func approve(changeID: String, signer: any ListSigner) async throws(PublisherError) {
        guard setup.approverKeys.contains(where: { KeyDocumentTools.keyID(of: $0) == signer.keyID }) else {
            throw PublisherError(.untrustedApprover, "The key \(signer.keyID.prefix(16)) is neither in approverKeys nor a list key; its approval would count for nothing.")
        }
        let now = clock.now()
        guard let change = plan(at: now).staged.first(where: { $0.id == changeID }) else {
            throw PublisherError(.unknownChange, "No staged change has ID \(String(reflecting: changeID)); `pinstore publish pending` lists them.")
        }
        guard let pin = change.pin else {
            throw PublisherError(.unknownChange, "Change \(changeID) yields no pin (its chain did not validate); it cannot be approved.")
        }
        switch change.outcome {
        case .chainDidNotValidate, .expiresTooSoon, .tooManyPins:
            throw PublisherError(.unknownChange, "Change \(changeID) cannot be approved: \(change.outcome).")
        default:
            break
        }
        let message = PublicationRules.approvalMessage(changeID: changeID, partnerID: change.partnerID, leafSHA256: change.leafSHA256,
                                                       kind: change.kind, pin: pin)
        let signature = try await signer.sign(message)
        guard signer.publicKey.isValidSignature(signature, for: message) else {
            throw PublisherError(.signingFailed, "The approver's signature does not verify with its public key.")
        }
        state.approvals.removeAll { $0.changeID == changeID && $0.keyID == signer.keyID }
        state.approvals.append(PublisherState.Approval(changeID: changeID, partnerID: change.partnerID, leafSHA256: change.leafSHA256,
                                                       kind: change.kind, pin: pin, keyID: signer.keyID,
                                                       signature: signature.base64EncodedString(), approvedAt: now))
        save()
        logger.info("a staged change is approved", metadata: ["pinstore.change": "\(changeID)", "pinstore.partner": "\(change.partnerID)",
                                                              "pinstore.approver": "\(signer.keyID.prefix(16))"])
        await cycle()
    }
}
