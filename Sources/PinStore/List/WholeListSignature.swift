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
enum WholeListSignature {
    /// The member's name.
    static let member = "listSignature"

    /// The signature and the bytes it covers, when `body` starts with the member; nil when the
    /// body has no leading `listSignature` member.
    static func locate(in body: Data) -> (signature: String, signedBytes: Data)? {
        let bytes = [UInt8](body)
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 }
        }
        func expect(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected else { return false }
            index += expected.count
            return true
        }
        skipWhitespace()
        guard expect("{") else { return nil }
        skipWhitespace()
        guard expect("\"\(member)\"") else { return nil }
        skipWhitespace()
        guard expect(":") else { return nil }
        skipWhitespace()
        guard expect("\"") else { return nil }
        let valueStart = index
        // Base64 has no quote and no backslash, so the value ends at the next quote.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard bytes[index] != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        guard index < bytes.count else { return nil }
        let signature = String(decoding: bytes[valueStart..<index], as: UTF8.self)
        var signed = Data(bytes[..<valueStart])
        signed.append(contentsOf: bytes[index...])
        return (signature, signed)
    }

    /// Signs `body`, which must start with `{"listSignature": "",` (any JSON whitespace):
    /// returns the body with the signature filled in.
    static func sign(_ body: Data, with key: P256PrivateKey) throws(PinStoreError) -> Data {
        guard let located = locate(in: body), located.signature.isEmpty else {
            throw PinStoreError(.invalidListData, "The list does not start with an empty \"\(member)\" member to fill in.")
        }
        let signature = try key.signature(for: located.signedBytes).base64EncodedString()
        let text = String(decoding: body, as: UTF8.self)
        guard let range = text.range(of: "\"\(member)\": \"\"") ?? text.range(of: "\"\(member)\":\"\"") else {
            throw PinStoreError(.invalidListData, "The list's \"\(member)\" member is not in the signer's layout.")
        }
        return Data(text.replacingCharacters(in: range, with: "\"\(member)\": \"\(signature)\"").utf8)
    }
}

extension ListSignatureVerifier {
    /// Checks a static body's whole-list signature (``WholeListSignature``) and returns the
    /// `timestamp` it covers, which may then serve as a rollback floor; nil when the body has
    /// no whole-list signature and `required` is false.
    ///
    /// - Throws: ``PinStoreError/Code/invalidListSignature`` when the signature is required
    ///   but absent, or present and wrong; ``PinStoreError/Code/invalidListData`` when the
    ///   member is not where the format puts it, or the signed body has no `timestamp`.
    func verifyWholeList(body: Data, document: FingerprintListDocument, required: Bool) throws(PinStoreError) -> Int64? {
        guard let located = WholeListSignature.locate(in: body) else {
            if document.hasListSignature {
                throw PinStoreError(.invalidListData, "The \"\(WholeListSignature.member)\" member must be the list's first member, with a Base64 value.")
            }
            if required {
                throw PinStoreError(.invalidListSignature, "The list has no whole-list signature (\"\(WholeListSignature.member)\"), which this store requires; sign it with `pinstore sign`, or set requireListSignature to false.")
            }
            return nil
        }
        guard let signature = Base64.decodeStrict(located.signature) else {
            throw PinStoreError(.invalidListSignature, "The whole-list signature is not valid Base64.")
        }
        guard verify(signature, located.signedBytes) else {
            throw PinStoreError(.invalidListSignature, "The whole-list signature does not verify with the configured public key; the list was signed with another key, or changed after signing (entries added, removed or edited).")
        }
        guard let timestamp = document.timestamp else {
            throw PinStoreError(.invalidListData, "A list with a whole-list signature must carry a \"timestamp\".")
        }
        return timestamp
    }
}
