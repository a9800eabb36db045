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
        let message = try labelledMessage(of: body)
        var labelled: [(keyID: String, signature: Data)] = []
        for key in further {
            labelled.append((KeyDocumentTools.keyID(of: try key.publicKey), try key.signature(for: message)))
        }
        return try sign(try filling(body, labelled: labelled), with: first)
    }

    /// Signs `body`, which must start with `{"listSignature": "",` (any JSON whitespace):
    /// returns the body with the signature filled in.
    package static func sign(_ body: Data, with key: P256PrivateKey) throws(PinStoreError) -> Data {
        try filling(body, first: try key.signature(for: try firstMessage(of: body)))
    }

    // The steps of `sign`, for signers whose key is not in this process (a command that asks an
    // HSM, a co-signing publisher): sign the bytes each step names, then fill the result in.

    /// What the labelled (`listSignatures`) signatures of `body` cover: `body` must start with
    /// empty `listSignature` and `listSignatures` members.
    package static func labelledMessage(of body: Data) throws(PinStoreError) -> Data {
        guard let located = try locateAll(in: body), located.signature.isEmpty, located.hasExtraMember, located.extras.isEmpty else {
            throw PinStoreError(.invalidListData, "The list does not start with empty \"\(member)\" and \"\(extraMember)\" members to fill in.")
        }
        return located.extrasSignedBytes
    }

    /// `body` with its empty `listSignatures` member holding `labelled` (key ID, DER signature
    /// over ``labelledMessage(of:)``), in the order given.
    package static func filling(_ body: Data, labelled: [(keyID: String, signature: Data)]) throws(PinStoreError) -> Data {
        _ = try labelledMessage(of: body)
        let text = String(decoding: body, as: UTF8.self)
        guard let range = text.range(of: "\"\(extraMember)\": []") else {
            throw PinStoreError(.invalidListData, "The list's \"\(extraMember)\" member is not in the signer's layout.")
        }
        let extras = labelled.map { "{\"keyid\": \"\($0.keyID)\", \"signature\": \"\($0.signature.base64EncodedString())\"}" }
        return Data(text.replacingCharacters(in: range, with: "\"\(extraMember)\": [\(extras.joined(separator: ", "))]").utf8)
    }

    /// What `listSignature` covers: `body` (with any labelled signatures already filled in)
    /// must start with an empty `listSignature` member.
    package static func firstMessage(of body: Data) throws(PinStoreError) -> Data {
        guard let located = locate(in: body), located.signature.isEmpty else {
            throw PinStoreError(.invalidListData, "The list does not start with an empty \"\(member)\" member to fill in.")
        }
        return located.signedBytes
    }

    /// `body` with `listSignature` holding `signature` (DER, over ``firstMessage(of:)``).
    package static func filling(_ body: Data, first signature: Data) throws(PinStoreError) -> Data {
        _ = try firstMessage(of: body)
        let text = String(decoding: body, as: UTF8.self)
        guard let range = text.range(of: "\"\(member)\": \"\"") ?? text.range(of: "\"\(member)\":\"\"") else {
            throw PinStoreError(.invalidListData, "The list's \"\(member)\" member is not in the signer's layout.")
        }
        return Data(text.replacingCharacters(in: range, with: "\"\(member)\": \"\(signature.base64EncodedString())\"").utf8)
    }
}
