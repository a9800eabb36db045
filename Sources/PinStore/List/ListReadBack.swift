import Foundation

/// Reading lists back with the clients' own parser and verifier, so that tools (`pinstore
/// verify`, `pinstore serve`, the signer in PinStoreSigning) judge a list exactly as apps will.
/// Verifying only: nothing here signs.
package enum ListReadBack {
    /// One entry as parsed, with the per-entry signature it carried (nil when absent).
    package struct Entry: Sendable {
        /// The parsed entry.
        package let entry: FingerprintEntry
        /// The `signature` member as served, not yet checked.
        package let signature: String?
    }

    /// A list as parsed by the clients' strict parser, not yet verified.
    package struct List: Sendable {
        /// The entries in list order.
        package let entries: [Entry]
        /// The challenge-mode `timestamp`, when the body has one.
        package let timestamp: Int64?
    }

    /// Parses `body` as clients do; throws ``PinStoreError/Code/invalidListData`` saying what
    /// is wrong.
    package static func parse(_ body: Data) throws(PinStoreError) -> List {
        let document = try FingerprintListDocument(body: body)
        return List(entries: document.entries.map { Entry(entry: $0.entry, signature: $0.signature) },
                    timestamp: document.timestamp)
    }

    /// Throws what a client would refuse `body` for, signatures aside: the list's format and
    /// its Certificate Transparency section. A signer calls it before it signs.
    package static func checkClientsAccept(_ body: Data) throws(PinStoreError) {
        let document = try FingerprintListDocument(body: body)
        _ = try document.certificateTransparency.map(CTLogList.init)
        _ = try document.revocations.map(ListRevocations.init)
        _ = try document.crl.map(CRLHostList.init)
    }

    /// The timestamp a static list's whole-list signature covers, nil when the list has no
    /// such signature; throws when it has one that does not verify (``WholeListSignature``).
    package static func wholeListSignatureTimestamp(_ body: Data, publicKey: P256PublicKey) throws(PinStoreError) -> Int64? {
        let document = try FingerprintListDocument(body: body)
        return try ListSignatureVerifier(publicKey: publicKey).verifyWholeList(body: body, document: document, required: false)
    }

    /// Whether one static-mode entry's signature verifies, by the clients' rules (strict
    /// Base64; DER, or raw `r||s` as a convenience).
    package static func entrySignatureIsValid(_ signature: String?, for entry: FingerprintEntry, publicKey: P256PublicKey) -> Bool {
        guard let signature, let bytes = Base64.decodeStrict(signature) else { return false }
        return ListSignatureVerifier(publicKey: publicKey).verify(bytes, entry.signedBytes)
    }

    /// Verifies a challenge-mode response exactly as clients do: the response signature over
    /// `challenge & body`, then the body's format.
    package static func verifyChallengeResponse(_ body: Data, challenge: String, signatureHeader: String?, publicKey: P256PublicKey) throws(PinStoreError) -> List {
        try ListSignatureVerifier(publicKey: publicKey).verifyChallenge(body: body, challenge: challenge, signatureHeader: signatureHeader)
        return try parse(body)
    }
}
