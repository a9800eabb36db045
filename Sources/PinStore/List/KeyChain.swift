import Foundation

/// The key documents a list server publishes beside its list (``PinStore/Configuration/keyDocumentURL``),
/// and the rules a store follows them by: The Update Framework's root rotation, applied to the
/// list-signing keys.
///
/// ```json
/// {"keyDocuments": [ <envelope of version 2>, <envelope of version 3>, ... ]}
/// ```
///
/// (envelopes: ``KeyDocument``). Publishers append each new version and may drop old ones; a
/// store that is further behind than the oldest one served cannot catch up (it reports a
/// skipped version) and needs a release with a newer configured key set.
///
/// Everything here is a pure function of the bytes, the trusted set and one time.
enum KeyChain {
    /// Rotations one update follows at most (python-tuf's default). More is refused, so a
    /// hostile server cannot make one update verify an unbounded chain.
    static let maximumStepsPerUpdate = 32
    /// Bytes past which the served key documents are refused unread (32 documents of 16 keys
    /// and 16 signatures each fit well within it).
    static let maximumSize = 256 * 1024
    /// Documents a store file may hold (every version accepted since the configured one).
    static let maximumStoredDocuments = 1024
    /// Bytes past which a store's key document file is not read.
    static let maximumStoredSize = 8 * 1024 * 1024

    /// Parses the served (or stored) document list; verifies nothing.
    static func documents(in body: Data, maximumSize: Int = maximumSize) throws(PinStoreError) -> [KeyDocument] {
        guard body.count <= maximumSize else {
            throw PinStoreError(.invalidKeyDocument, "The key documents are \(body.count) bytes, more than the \(maximumSize)-byte limit; publish only the recent versions.")
        }
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: body)
        } catch {
            throw PinStoreError(.invalidKeyDocument, "The key documents are not {\"keyDocuments\": [envelopes]}: \(error)")
        }
        var documents: [KeyDocument] = []
        for envelope in wire.keyDocuments {
            documents.append(try KeyDocument(wire: envelope))
        }
        return documents
    }

    /// Follows `documents` from `trusted` to the newest version: every version after
    /// `trusted.version` up to the newest must be there (none skipped), each signed by a
    /// threshold of the keys before it **and** of its own. Returns the documents accepted, in
    /// order (empty when the newest is `trusted.version`: nothing to do). Expiry is not
    /// checked here: an expired intermediate document is fine, and only the final one's expiry
    /// matters (``checkNotExpired(_:at:)``).
    ///
    /// - Throws: ``PinStoreError/Code/rollback`` when the newest version is older than the
    ///   trusted one; ``PinStoreError/Code/invalidKeyDocument`` for a skipped or duplicated
    ///   version, or more than `maximumSteps` versions to follow;
    ///   ``PinStoreError/Code/keyDocumentThresholdNotMet`` for a step without enough signatures.
    static func follow(from trusted: ListKeySet, documents: [KeyDocument],
                       maximumSteps: Int = maximumStepsPerUpdate) throws(PinStoreError) -> [KeyDocument] {
        guard let newest = documents.map(\.keySet.version).max() else { return [] }
        if newest < trusted.version {
            throw PinStoreError(.rollback, "The newest key document served is version \(newest), older than the trusted version \(trusted.version); refusing a rollback of the list-signing keys.")
        }
        guard newest > trusted.version else { return [] }
        guard newest - trusted.version <= Int64(maximumSteps) else {
            throw PinStoreError(.invalidKeyDocument, "Key document version \(newest) is \(newest - trusted.version) versions after the trusted \(trusted.version); one update follows at most \(maximumSteps). Ship a release with a newer key set.")
        }
        var byVersion: [Int64: KeyDocument] = [:]
        for document in documents where document.keySet.version > trusted.version {
            guard byVersion.updateValue(document, forKey: document.keySet.version) == nil else {
                throw PinStoreError(.invalidKeyDocument, "Key document version \(document.keySet.version) is served twice.")
            }
        }
        var current = trusted
        var accepted: [KeyDocument] = []
        for version in (trusted.version + 1)...newest {
            guard let next = byVersion[version] else {
                throw PinStoreError(.invalidKeyDocument, "Key document version \(version) is missing between the trusted \(current.version) and the newest \(newest); versions cannot be skipped.")
            }
            let byPrevious = next.signatureCount(by: current)
            guard byPrevious >= current.threshold else {
                throw PinStoreError(.keyDocumentThresholdNotMet, "Key document \(version) is signed by \(byPrevious) of version \(current.version)'s keys; \(current.threshold) needed. Sign it with the old keys too (`pinstore keys next --sign-with`).")
            }
            let byItself = next.signatureCount(by: next.keySet)
            guard byItself >= next.keySet.threshold else {
                throw PinStoreError(.keyDocumentThresholdNotMet, "Key document \(version) is signed by \(byItself) of its own keys; \(next.keySet.threshold) needed (the new keys prove they can sign).")
            }
            accepted.append(next)
            current = next.keySet
        }
        return accepted
    }

    /// Refuses a key set whose `expires` has passed at `now` (the one time of this update):
    /// a freeze attack, or a publisher who forgot to re-sign. The configured set never expires.
    static func checkNotExpired(_ set: ListKeySet, at now: Date) throws(PinStoreError) {
        guard let expires = set.expires, now.timeIntervalSince1970 >= Double(expires) else { return }
        throw PinStoreError(.expired, "The newest key document (version \(set.version)) expired at \(Date(timeIntervalSince1970: TimeInterval(expires))); publish a re-signed version with a later \"expires\". No list is accepted until then.")
    }

    /// The served form of `envelopes` (tools, stores, tests).
    static func encode(_ documents: [KeyDocument.EnvelopeWire]) throws(PinStoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(Wire(keyDocuments: documents))
        } catch {
            throw PinStoreError(.invalidKeyDocument, "The key documents could not be encoded: \(error)")
        }
    }

    private struct Wire: Codable {
        let keyDocuments: [KeyDocument.EnvelopeWire]
    }
}
