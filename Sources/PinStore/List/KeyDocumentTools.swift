import Foundation

/// Key documents for tools (`pinstore keys`, `pinstore serve`) and tests: chain them and check
/// them exactly as a store does (``KeyChain``, ``ListVerifier``). Making (signing) one is the
/// signing side's (`KeyDocument+Signing.swift` in PinStoreSigning).
package enum KeyDocumentTools {
    /// What one verified key document says.
    package struct Summary: Sendable {
        /// The document's version.
        package let version: Int64
        /// Distinct keys needed to sign.
        package let threshold: Int
        /// The keys' IDs (lowercase hex SHA-256 of the X9.63 point), in document order.
        package let keyIDs: [String]
        /// When the document stops being acceptable as the newest (Unix seconds).
        package let expires: Int64
    }

    /// A key's ID, as signatures are labelled with it.
    package static func keyID(of key: P256PublicKey) -> String {
        ListKeySet.keyID(of: key)
    }

    /// A served key document file holding no document yet.
    package static let emptyChain = Data("{\"keyDocuments\": []}".utf8)

    /// `chain` (a served key document file, or nil for a new one) with `envelope` appended.
    /// The new document must be the next version and must follow from the newest one present
    /// (a threshold of its keys and of its own); a first document must be signed by a
    /// threshold of its own keys.
    package static func append(_ envelope: Data, to chain: Data?) throws(PinStoreError) -> Data {
        let existing = try chain.map { data throws(PinStoreError) in try KeyChain.documents(in: data) } ?? []
        let document = try KeyDocument(envelope: envelope)
        if let newest = existing.max(by: { $0.keySet.version < $1.keySet.version }) {
            guard document.keySet.version == newest.keySet.version + 1 else {
                throw PinStoreError(.invalidKeyDocument, "The new document is version \(document.keySet.version); the next one after \(newest.keySet.version) is \(newest.keySet.version + 1).")
            }
            _ = try KeyChain.follow(from: newest.keySet, documents: [document])
        } else {
            let byItself = document.signatureCount(by: document.keySet)
            guard byItself >= document.keySet.threshold else {
                throw PinStoreError(.keyDocumentThresholdNotMet, "Key document \(document.keySet.version) is signed by \(byItself) of its own keys; \(document.keySet.threshold) needed.")
            }
        }
        return try KeyChain.encode(existing.map(\.wire) + [document.wire])
    }

    /// Verifies a served key document file as a store trusting `keys` with `threshold` at
    /// `trustedVersion` would at `now`: every step, and the final document's expiry. Without
    /// `keys`, the oldest document served is trusted as it is (after checking it is signed by
    /// a threshold of its own keys). Returns the documents followed, oldest first.
    package static func verify(_ chain: Data, keys: [P256PublicKey]?, threshold: Int, trustedVersion: Int64,
                               now: Date) throws(PinStoreError) -> [Summary] {
        let documents = try KeyChain.documents(in: chain)
        var start: ListKeySet
        var followed: [KeyDocument] = []
        if let keys {
            start = try ListKeySet(version: trustedVersion, keys: keys, threshold: threshold, expires: nil)
        } else {
            guard let oldest = documents.min(by: { $0.keySet.version < $1.keySet.version }) else {
                throw PinStoreError(.invalidKeyDocument, "The file holds no key document.")
            }
            guard oldest.signatureCount(by: oldest.keySet) >= oldest.keySet.threshold else {
                throw PinStoreError(.keyDocumentThresholdNotMet, "Key document \(oldest.keySet.version) is not signed by a threshold of its own keys.")
            }
            start = oldest.keySet
            followed.append(oldest)
        }
        followed += try KeyChain.follow(from: start, documents: documents, maximumSteps: KeyChain.maximumStoredDocuments)
        if let last = followed.last { start = last.keySet }
        try KeyChain.checkNotExpired(start, at: now)
        return followed.map { Summary(version: $0.keySet.version, threshold: $0.keySet.threshold, keyIDs: $0.keySet.keyIDs,
                                      expires: $0.keySet.expires ?? 0) }
    }

    /// The key set the newest document of `chain` names (after verifying the chain from its
    /// oldest document), for checking lists against it.
    package static func newestKeys(_ chain: Data, now: Date) throws(PinStoreError) -> (keys: [P256PublicKey], threshold: Int, version: Int64) {
        let documents = try KeyChain.documents(in: chain)
        _ = try verify(chain, keys: nil, threshold: 1, trustedVersion: 0, now: now)
        guard let newest = documents.max(by: { $0.keySet.version < $1.keySet.version }) else {
            throw PinStoreError(.invalidKeyDocument, "The file holds no key document.")
        }
        return (newest.keySet.keys, newest.keySet.threshold, newest.keySet.version)
    }

    /// What a store verifying a static list with `keys` and `threshold` makes of `body`:
    /// the entries and the signed `version`, `expires` and `timestamp` (nil when absent or
    /// not covered by a whole-list signature). Expiry is not judged here.
    package static func verifyStaticList(_ body: Data, keys: [P256PublicKey], threshold: Int)
        throws(PinStoreError) -> (entries: [FingerprintEntry], version: Int64?, expires: Int64?, timestamp: Int64?) {
        let verifier = ListVerifier(keys: try ListKeySet(version: 0, keys: keys, threshold: threshold, expires: nil),
                                    requireListSignature: false, mode: .static)
        let verified = try verifier.verify(PersistedList(mode: .static, body: body, nextUpdate: 0))
        return (verified.entries, verified.version, verified.expires, verified.timestamp)
    }
}
