import Foundation

/// Verifying a served fingerprint list outside a store: for tools, servers that re-publish a
/// list, and anyone who wants to check a list before deploying it.
///
/// ```swift
/// let key = try P256PublicKey(configuredString: "BC3kV9OIDnMu...Nv+XE=")
/// let entries = try FingerprintList.verifiedEntries(staticList: body, publicKey: key)
/// ```
public enum FingerprintList {
    /// Parses a static-mode list and verifies every entry's signature, and the whole-list
    /// signature when the list has one (as a store does); throws on the first problem
    /// (``PinStoreError/Code/invalidListData`` or ``PinStoreError/Code/invalidListSignature``).
    /// Expired entries are returned too: expiry is the caller's decision.
    public static func verifiedEntries(staticList body: Data, publicKey: P256PublicKey) throws(PinStoreError) -> [FingerprintEntry] {
        let verifier = ListSignatureVerifier(publicKey: publicKey)
        let document = try FingerprintListDocument(body: body)
        let entries = try verifier.verifyStatic(document)
        _ = try verifier.verifyWholeList(body: body, document: document, required: false)
        return entries
    }

    /// Like ``verifiedEntries(staticList:publicKey:)`` for a key set: the whole-list signatures
    /// (`listSignature`, `listSignatures`) must come from at least `threshold` distinct keys of
    /// `publicKeys`, and the per-entry signatures from one of them, as a store configured with
    /// ``PinStore/Configuration/additionalPublicKeys`` and ``PinStore/Configuration/signatureThreshold``
    /// checks them. The list's own `expires` is not judged here.
    ///
    /// ```swift
    /// let entries = try FingerprintList.verifiedEntries(staticList: body, publicKeys: [keyA, keyB, keyC], threshold: 2)
    /// ```
    public static func verifiedEntries(staticList body: Data, publicKeys: [P256PublicKey],
                                       threshold: Int) throws(PinStoreError) -> [FingerprintEntry] {
        let keys = try ListKeySet(version: 0, keys: publicKeys, threshold: threshold, expires: nil)
        return try ListVerifier(keys: keys, requireListSignature: false, mode: .static)
            .verify(PersistedList(mode: .static, body: body, nextUpdate: 0)).entries
    }

    /// Verifies a challenge-mode response (`signature` is the `X-Cert-Pinning-Signature`
    /// header, over `challenge + "&" + body`) and parses its body.
    public static func verifiedEntries(challengeResponse body: Data, challenge: String, signature: String,
                                       publicKey: P256PublicKey) throws(PinStoreError) -> (entries: [FingerprintEntry], timestamp: Int64?) {
        try ListSignatureVerifier(publicKey: publicKey).verifyChallenge(body: body, challenge: challenge, signatureHeader: signature)
        let document = try FingerprintListDocument(body: body)
        return (document.entries.map(\.entry), document.timestamp)
    }
}
