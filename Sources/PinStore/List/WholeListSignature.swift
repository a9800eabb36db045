import Foundation

/// The optional whole-list signature of a static-mode list: what closes replay, splicing and
/// re-depthing for teams who sign with `pinstore sign`, while staying readable by the deployed
/// clients (they ignore members they do not know).
///
/// The document's **first** member is `"listSignature"`, a Base64 DER ECDSA P-256/SHA-256
/// signature over the exact bytes of the body with that Base64 value removed (the member
/// reads `"listSignature": ""` in the signed bytes). The body must also carry a `timestamp`
/// (Unix seconds), which the signature therefore covers and which serves as the rollback
/// floor:
///
/// ```json
/// {
///   "listSignature": "MEUCIQ...",
///   "timestamp": 1767225600,
///   "fingerprints": [
///     {"name": "api.example.com", "fingerprint": "...", "expires": 1900000000, "signature": "..."}
///   ]
/// }
/// ```
///
/// Every byte outside the signature's own value is covered: entries, `depth`, `timestamp`,
/// whitespace, any other member. Per-entry signatures stay, for the deployed clients.
///
/// **Several keys** (a key set with a threshold, ``PinStore/Configuration/signatureThreshold``):
/// the further signatures go in a `"listSignatures"` member that must come **second**, right
/// after `listSignature`, each labelled with its key ID (``ListKeySet/keyID(of:)``):
///
/// ```json
/// {
///   "listSignature": "MEUCIQ...",
///   "listSignatures": [{"keyid": "3f1c...", "signature": "MEQCIA..."}],
///   "version": 7, "expires": 1767830400, "timestamp": 1767225600,
///   "fingerprints": [...]
/// }
/// ```
///
/// A `listSignatures` signature covers the body with `listSignature`'s value removed **and**
/// the array emptied (`"listSignatures": []`); `listSignature` covers the body with only its own
/// value removed, the further signatures included. So a PinStore that knows one key reads
/// `listSignature` exactly as before (made by that key), and a store with a key set counts
/// each distinct trusted key once. Signers make the labelled signatures first, then the first
/// (`WholeListSignature+Signing.swift` in PinStoreSigning: the runtime only locates and verifies).
package enum WholeListSignature {
    /// The member's name.
    package static let member = "listSignature"
    /// The member holding the further, labelled signatures.
    package static let extraMember = "listSignatures"

    /// A body's whole-list signatures and the bytes each kind covers.
    package struct Located {
        /// `listSignature`'s value.
        package let signature: String
        /// The body with that value removed: what `signature` covers.
        package let signedBytes: Data
        /// The labelled signatures of `listSignatures` (empty when the member is absent).
        package let extras: [(keyID: String, signature: String)]
        /// The body with `listSignature`'s value removed and `listSignatures` emptied: what
        /// the labelled signatures cover (equal to ``signedBytes`` without the member).
        package let extrasSignedBytes: Data
        /// Whether the body has the `listSignatures` member where the format puts it.
        package let hasExtraMember: Bool
    }

    /// Both kinds of signature, when `body` starts with `listSignature` (nil otherwise).
    /// Throws ``PinStoreError/Code/invalidListData`` when `listSignatures` follows but is not
    /// an array of `{"keyid", "signature"}` objects.
    package static func locateAll(in body: Data) throws(PinStoreError) -> Located? {
        guard let (signature, signed) = locate(in: body) else { return nil }
        var scanner = LeadingMembers(bytes: [UInt8](signed))
        let none = Located(signature: signature, signedBytes: signed, extras: [], extrasSignedBytes: signed, hasExtraMember: false)
        // `{ "listSignature" : "" , "listSignatures" : [ ... ]`: the blanked first member is
        // known to be there; find the second.
        guard scanner.expect("{") else { return none }
        guard scanner.expect("\"\(member)\"") else { return none }
        guard scanner.expect(":") else { return none }
        guard scanner.expect("\"\"") else { return none }
        guard scanner.expect(",") else { return none }
        guard scanner.expect("\"\(extraMember)\"") else { return none }
        guard scanner.expect(":") else { return none }
        guard scanner.expect("[") else {
            throw PinStoreError(.invalidListData, "\"\(extraMember)\" must be an array of {\"keyid\", \"signature\"} objects.")
        }
        let arrayStart = scanner.index - 1
        // Key IDs are hex and signatures Base64: neither holds a `]`, so the array ends at the next one.
        while scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] != UInt8(ascii: "]") { scanner.index += 1 }
        guard scanner.index < scanner.bytes.count else {
            throw PinStoreError(.invalidListData, "\"\(extraMember)\" is not a closed array.")
        }
        let arrayBytes = Data(scanner.bytes[arrayStart...scanner.index])
        let wire: [KeyDocument.EnvelopeWire.Signature]
        do {
            wire = try JSONDecoder().decode([KeyDocument.EnvelopeWire.Signature].self, from: arrayBytes)
        } catch {
            throw PinStoreError(.invalidListData, "\"\(extraMember)\" must be an array of {\"keyid\": hex, \"signature\": Base64} objects.")
        }
        var emptied = Data(scanner.bytes[...arrayStart])
        emptied.append(contentsOf: scanner.bytes[scanner.index...])
        return Located(signature: signature, signedBytes: signed, extras: wire.map { ($0.keyid, $0.signature) },
                       extrasSignedBytes: emptied, hasExtraMember: true)
    }

    /// The signature and the bytes it covers, when `body` starts with the member; nil when the
    /// body has no leading `listSignature` member.
    package static func locate(in body: Data) -> (signature: String, signedBytes: Data)? {
        var scanner = LeadingMembers(bytes: [UInt8](body))
        guard scanner.expect("{") else { return nil }
        guard scanner.expect("\"\(member)\"") else { return nil }
        guard scanner.expect(":") else { return nil }
        guard scanner.expect("\"") else { return nil }
        let valueStart = scanner.index
        // Base64 has no quote and no backslash, so the value ends at the next quote.
        while scanner.index < scanner.bytes.count, scanner.bytes[scanner.index] != UInt8(ascii: "\"") {
            guard scanner.bytes[scanner.index] != UInt8(ascii: "\\") else { return nil }
            scanner.index += 1
        }
        guard scanner.index < scanner.bytes.count else { return nil }
        let signature = String(decoding: scanner.bytes[valueStart..<scanner.index], as: UTF8.self)
        var signed = Data(scanner.bytes[..<valueStart])
        signed.append(contentsOf: scanner.bytes[scanner.index...])
        return (signature, signed)
    }
}

extension ListSignatureVerifier {
    /// Checks a static body's whole-list signature with this verifier's one key; see
    /// ``WholeListSignature/verify(body:document:keys:required:)``.
    func verifyWholeList(body: Data, document: FingerprintListDocument, required: Bool) throws(PinStoreError) -> Int64? {
        let keys: ListKeySet
        do {
            keys = try ListKeySet(version: 0, keys: [publicKey], threshold: 1, expires: nil)
        } catch {
            throw PinStoreError(.invalidListSignature, error.reason)
        }
        return try WholeListSignature.verify(body: body, document: document, keys: keys, required: required)
    }
}

extension WholeListSignature {
    /// Checks a static body's whole-list signatures against `keys` (at least `keys.threshold`
    /// distinct keys must have signed) and returns the `timestamp` they cover, which may then
    /// serve as a rollback floor; nil when the body has no whole-list signature and `required`
    /// is false.
    ///
    /// - Throws: ``PinStoreError/Code/invalidListSignature`` when the signature is required
    ///   but absent, or present and wrong, or too few keys signed;
    ///   ``PinStoreError/Code/invalidListData`` when a member is not where the format puts it,
    ///   or the signed body has no `timestamp`.
    static func verify(body: Data, document: FingerprintListDocument, keys: ListKeySet, required: Bool) throws(PinStoreError) -> Int64? {
        guard let located = try locateAll(in: body) else {
            if document.hasListSignature {
                throw PinStoreError(.invalidListData, "The \"\(member)\" member must be the list's first member, with a Base64 value.")
            }
            if required || keys.threshold > 1 {
                let why = keys.threshold > 1
                    ? "which a key set with threshold \(keys.threshold) needs; sign it with `pinstore sign` and \(keys.threshold) keys"
                    : "which this store requires; sign it with `pinstore sign`, or set requireListSignature to false"
                throw PinStoreError(.invalidListSignature, "The list has no whole-list signature (\"\(member)\"), \(why).")
            }
            return nil
        }
        if document.hasExtraListSignatures, !located.hasExtraMember {
            throw PinStoreError(.invalidListData, "The \"\(extraMember)\" member must come right after \"\(member)\".")
        }
        guard let signature = Base64.decodeStrict(located.signature) else {
            throw PinStoreError(.invalidListSignature, "The whole-list signature is not valid Base64.")
        }
        let signers = keys.signers(labelled: located.extras, labelledMessage: located.extrasSignedBytes,
                                   unlabelled: signature, unlabelledMessage: located.signedBytes)
        guard signers.count >= keys.threshold else {
            if keys.isSingleKey {
                throw PinStoreError(.invalidListSignature, "The whole-list signature does not verify with the configured public key; the list was signed with another key, or changed after signing (entries added, removed or edited).")
            }
            throw PinStoreError(.invalidListSignature, "The list is signed by \(signers.count) of the \(keys.keys.count) trusted keys (key set version \(keys.version)); \(keys.threshold) distinct keys are needed. Was it signed with a retired key, or changed after signing?")
        }
        guard let timestamp = document.timestamp else {
            throw PinStoreError(.invalidListData, "A list with a whole-list signature must carry a \"timestamp\".")
        }
        return timestamp
    }
}

/// Reads the members a signed list starts with, byte by byte: the signatures cover the exact
/// bytes of the body, so the members are found where they are written, not by re-encoding
/// decoded JSON.
private struct LeadingMembers {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Skips JSON whitespace, then consumes `text` if it comes next.
    mutating func expect(_ text: String) -> Bool {
        while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 }
        let expected = Array(text.utf8)
        guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected else { return false }
        index += expected.count
        return true
    }
}
