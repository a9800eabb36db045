import Foundation
import PinStore

// Signing half of the whole-list signature (the format, and its verification, are in the
// core's WholeListSignature.swift): the signer fills in the members the verifier locates.
extension WholeListSignature {
    /// Signs `body` with several keys: `body` must start with `{"listSignature": "",` and,
    /// when there are further keys, `"listSignatures": [],` right after. The further keys sign
    /// first (labelled), then the first key signs the result.
    package static func sign(_ body: Data, with keys: [P256PrivateKey]) throws(PinStoreError) -> Data {
        guard let first = keys.first else {
            throw PinStoreError(.privateKeyInvalid, "Signing a list needs at least one key.")
        }
        let further = keys.dropFirst()
        guard !further.isEmpty else { return try sign(body, with: first) }
        let text = String(decoding: body, as: UTF8.self)
        guard let located = try locateAll(in: body), located.signature.isEmpty, located.hasExtraMember, located.extras.isEmpty,
              let range = text.range(of: "\"\(extraMember)\": []") else {
            throw PinStoreError(.invalidListData, "The list does not start with empty \"\(member)\" and \"\(extraMember)\" members to fill in.")
        }
        var extras: [String] = []
        for key in further {
            let signature = try key.signature(for: located.extrasSignedBytes).base64EncodedString()
            extras.append("{\"keyid\": \"\(KeyDocumentTools.keyID(of: try key.publicKey))\", \"signature\": \"\(signature)\"}")
        }
        let filled = text.replacingCharacters(in: range, with: "\"\(extraMember)\": [\(extras.joined(separator: ", "))]")
        return try sign(Data(filled.utf8), with: first)
    }

    /// Signs `body`, which must start with `{"listSignature": "",` (any JSON whitespace):
    /// returns the body with the signature filled in.
    package static func sign(_ body: Data, with key: P256PrivateKey) throws(PinStoreError) -> Data {
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
