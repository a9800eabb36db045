import Foundation

/// Verifies signed list material (from the network or the store file) against a key set: a
/// pure function of the bytes, the keys and the options, with no clock and no state. What a
/// verified list means against the one in force (rollback, expiry) is decided afterwards.
package struct ListVerifier: Sendable {
    /// The keys in force.
    let keys: ListKeySet
    /// Whether a static list must carry a whole-list signature even with one key.
    let requireListSignature: Bool
    /// The mode the store is configured for.
    let mode: PersistedList.Mode

    /// The request header carrying the labelled challenge-mode signatures of a key set:
    /// `<keyid>:<Base64 DER signature>` pairs separated by commas, each over the same
    /// `challenge & body` as `X-Cert-Pinning-Signature`.
    package static let extraSignaturesHeader = "X-PinStore-Signatures"

    func verify(_ persisted: PersistedList) throws(PinStoreError) -> PinStore.VerifiedList {
        // The configured mode decides what counts as signed: a static file must not load into
        // a challenge-mode store (whose guarantees, such as rollback protection, it lacks).
        guard persisted.mode == mode else {
            throw PinStoreError(.storage, "The stored list is in \(persisted.mode.rawValue) mode but the store is configured for \(mode.rawValue) mode; ignoring it until the next update.")
        }
        switch persisted.mode {
        case .static:
            let document = try FingerprintListDocument(body: persisted.body)
            let entries = try entryVerifier(for: document).verifyStatic(document)
            // Only a whole-list signature covers a static body's `timestamp`, `version` and
            // `expires`; without one they must not count (a forged huge value would refuse
            // every later list).
            let signedTimestamp = try WholeListSignature.verify(body: persisted.body, document: document, keys: keys,
                                                                required: requireListSignature)
            // Key pins (`"pin": "spki"` / `"ca-spki"`) only where a signature covers that member.
            // A per-entry signature covers `name&fingerprint&expires` only, so whoever answers the
            // unsigned list request could otherwise turn a certificate pin into a key pin, or a
            // leaf key pin into a CA key pin that any certificate above the leaf may satisfy:
            // trust widened by a field nobody signed. Without a whole-list signature such
            // entries are dropped (never read as certificate pins either); a list with one has
            // every member covered.
            let covered = signedTimestamp != nil ? entries : entries.filter { $0.kind == .certificate }
            // The CT section names log keys and per-host modes: read only under a signature
            // that covers it. A static list that carries one without a whole-list signature is
            // refused rather than half-applied (its pins without the CT the team asked for).
            if signedTimestamp == nil, document.certificateTransparency != nil {
                throw PinStoreError(.invalidListSignature, "The list has a certificateTransparency section but no whole-list signature, which alone covers it; `pinstore sign` adds one unless given --no-list-signature.")
            }
            // The same for revocations: refused, not ignored, so that a team that publishes one
            // learns at once that its clients would not enforce it.
            if signedTimestamp == nil, document.revocations != nil {
                throw PinStoreError(.invalidListSignature, "The list has a revocations section but no whole-list signature, which alone covers it; `pinstore sign` adds one unless given --no-list-signature.")
            }
            // The same for the CRL modes: unsigned, they could be turned off by whoever answers.
            if signedTimestamp == nil, document.crl != nil {
                throw PinStoreError(.invalidListSignature, "The list has a crl section but no whole-list signature, which alone covers it; `pinstore sign` adds one unless given --no-list-signature.")
            }
            return PinStore.VerifiedList(persisted: persisted, entries: covered, timestamp: signedTimestamp,
                                         version: signedTimestamp == nil ? nil : document.version,
                                         expires: signedTimestamp == nil ? nil : document.expires,
                                         certificateTransparency: try document.certificateTransparency.map(CTLogList.init),
                                         revocations: try document.revocations.map(ListRevocations.init),
                                         crl: try document.crl.map(CRLHostList.init))
        case .challenge:
            // The signature covers the body: check it before parsing anything.
            try verifyChallenge(persisted)
            let document = try FingerprintListDocument(body: persisted.body)
            return PinStore.VerifiedList(persisted: persisted, entries: document.entries.map(\.entry), timestamp: document.timestamp,
                                         version: document.version, expires: document.expires,
                                         domainsConfig: try DomainsConfig(challengeBody: persisted.body),
                                         certificateTransparency: try document.certificateTransparency.map(CTLogList.init),
                                         revocations: try document.revocations.map(ListRevocations.init),
                                         crl: try document.crl.map(CRLHostList.init))
        }
    }

    /// The per-entry signatures are made with one key (the deployed clients know one): the
    /// first key of the set that verifies the first entry must verify them all. With one
    /// key that is today's check, signature for signature.
    private func entryVerifier(for document: FingerprintListDocument) -> ListSignatureVerifier {
        guard !keys.isSingleKey, let first = document.entries.first,
              let text = first.signature, let signature = Base64.decodeStrict(text) else {
            return ListSignatureVerifier(publicKey: keys.keys[0])
        }
        let signer = keys.keys.first { ListKeySet.verify(signature, first.entry.signedBytes, with: $0) }
        return ListSignatureVerifier(publicKey: signer ?? keys.keys[0])
    }

    /// Challenge mode: `X-Cert-Pinning-Signature` by any key of the set, plus labelled
    /// signatures in ``extraSignaturesHeader``, all over `challenge & body`; at least
    /// `threshold` distinct keys.
    private func verifyChallenge(_ persisted: PersistedList) throws(PinStoreError) {
        let challenge = persisted.challenge ?? ""
        if keys.isSingleKey {
            try ListSignatureVerifier(publicKey: keys.keys[0])
                .verifyChallenge(body: persisted.body, challenge: challenge, signatureHeader: persisted.signature)
            return
        }
        guard let header = persisted.signature, !header.isEmpty else {
            throw PinStoreError(.invalidListSignature, "The response has no X-Cert-Pinning-Signature header; is the server in challenge mode?")
        }
        guard let signature = Base64.decodeStrict(header) else {
            throw PinStoreError(.invalidListSignature, "The X-Cert-Pinning-Signature header is not valid Base64.")
        }
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(persisted.body)
        let signers = keys.signers(labelled: Self.parseExtraSignatures(persisted.extraSignatures), labelledMessage: signed,
                                   unlabelled: signature, unlabelledMessage: signed)
        guard signers.count >= keys.threshold else {
            throw PinStoreError(.invalidListSignature, "The response is signed by \(signers.count) of the \(keys.keys.count) trusted keys (key set version \(keys.version)) over this request's challenge; \(keys.threshold) distinct keys are needed (the further ones in \(Self.extraSignaturesHeader)).")
        }
    }

    /// `keyid:signature, keyid:signature` (malformed pairs are skipped: they count for no key).
    static func parseExtraSignatures(_ header: String?) -> [(keyID: String, signature: String)] {
        guard let header else { return [] }
        return header.split(separator: ",").compactMap { pair in
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return (String(parts[0]), String(parts[1]))
        }
    }
}
