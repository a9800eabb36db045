import Foundation

/// One signed key document: the list's "root" in the sense of The Update Framework. Version
/// N+1 names the keys and threshold that sign lists from then on, and is signed by a threshold
/// of version N's keys **and** a threshold of its own.
///
/// On the wire (an envelope, so that signers sign bytes, never a re-serialization):
///
/// ```json
/// {"signed": "<Base64 of the payload bytes>",
///  "signatures": [{"keyid": "<hex SHA-256 of the X9.63 point>", "signature": "<Base64 DER ECDSA>"}]}
/// ```
///
/// and the payload, whose exact bytes every signature covers (ECDSA P-256 / SHA-256):
///
/// ```json
/// {"type": "pinstore-keys", "version": 2, "expires": 1924992000, "threshold": 2,
///  "keys": ["<Base64 X9.63 point>", "...", "..."]}
/// ```
///
/// `type` keeps a key document's signature from being mistaken for any other signed thing.
package struct KeyDocument: Sendable {
    /// The key set the document names.
    let keySet: ListKeySet
    /// The payload bytes the signatures cover.
    let payload: Data
    /// The labelled signatures, as served.
    let signatures: [(keyID: String, signature: String)]
    /// The envelope as served (the payload's Base64 and the signatures verbatim): what the
    /// store persists and re-verifies on load.
    let wire: EnvelopeWire

    /// The payload's `type`.
    package static let type = "pinstore-keys"

    /// Parses an envelope (not yet verified).
    package init(envelope: Data) throws(PinStoreError) {
        let wire: EnvelopeWire
        do {
            wire = try JSONDecoder().decode(EnvelopeWire.self, from: envelope)
        } catch {
            throw PinStoreError(.invalidKeyDocument, "A key document is not {\"signed\": Base64, \"signatures\": [{\"keyid\", \"signature\"}]}: \(error)")
        }
        try self.init(wire: wire)
    }

    /// Parses a decoded envelope (not yet verified).
    init(wire: EnvelopeWire) throws(PinStoreError) {
        guard let payload = Base64.decodeStrict(wire.signed) else {
            throw PinStoreError(.invalidKeyDocument, "A key document's \"signed\" member is not valid Base64.")
        }
        let body: PayloadWire
        do {
            body = try JSONDecoder().decode(PayloadWire.self, from: payload)
        } catch {
            throw PinStoreError(.invalidKeyDocument, "A key document's payload is not {\"type\", \"version\", \"expires\", \"threshold\", \"keys\"}: \(error)")
        }
        guard body.type == Self.type else {
            throw PinStoreError(.invalidKeyDocument, "A key document's type is \(String(reflecting: body.type)), not \"\(Self.type)\".")
        }
        // Below Int64.max so that "the next version" always exists (no arithmetic may trap).
        guard body.version >= 1, body.version < Int64.max else {
            throw PinStoreError(.invalidKeyDocument, "A key document's version must be between 1 and \(Int64.max - 1), not \(body.version).")
        }
        guard (0...FingerprintListDocument.latestExpires).contains(body.expires) else {
            throw PinStoreError(.invalidKeyDocument, "Key document \(body.version): expires \(body.expires) is not a Unix time in seconds between 1970 and 9999.")
        }
        var keys: [P256PublicKey] = []
        for (index, text) in body.keys.enumerated() {
            do {
                keys.append(try P256PublicKey(configuredString: text))
            } catch {
                throw PinStoreError(.invalidKeyDocument, "Key document \(body.version), key \(index + 1): \(error.reason)")
            }
        }
        do {
            self.keySet = try ListKeySet(version: body.version, keys: keys, threshold: body.threshold, expires: body.expires)
        } catch {
            throw PinStoreError(.invalidKeyDocument, "Key document \(body.version): \(error.reason)")
        }
        self.payload = payload
        self.signatures = wire.signatures.map { ($0.keyid, $0.signature) }
        self.wire = wire
    }

    /// How many distinct keys of `set` signed this document.
    func signatureCount(by set: ListKeySet) -> Int {
        set.signers(labelled: signatures, labelledMessage: payload, unlabelled: nil, unlabelledMessage: payload).count
    }

    /// The envelope's JSON.
    struct EnvelopeWire: Codable, Sendable {
        struct Signature: Codable, Sendable {
            let keyid: String
            let signature: String
        }
        let signed: String
        let signatures: [Signature]
    }

    private struct PayloadWire: Decodable {
        let type: String
        let version: Int64
        let expires: Int64
        let threshold: Int
        let keys: [String]
    }
}
