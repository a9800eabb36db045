import Foundation
import PinStore

// The signing half of the key document format (`KeyDocument` and `KeyDocumentTools` in the
// core read and check documents): the tool and the tests make them, stores only read them.
extension KeyDocument {
    /// The payload bytes for a key set, in the fixed member order signers write.
    package static func payload(version: Int64, expires: Int64, threshold: Int, keys: [P256PublicKey]) -> Data {
        let keyList = keys.map { "\"\($0.x963Representation.base64EncodedString())\"" }.joined(separator: ", ")
        return Data("{\"type\": \"\(type)\", \"version\": \(version), \"expires\": \(expires), \"threshold\": \(threshold), \"keys\": [\(keyList)]}".utf8)
    }

    /// An envelope for `payload` signed by each of `signers` (one signature each, labelled
    /// with its key ID), checked by parsing it back.
    package static func envelope(payload: Data, signers: [P256PrivateKey]) throws(PinStoreError) -> Data {
        var signatures: [String] = []
        for key in signers {
            let signature = try key.signature(for: payload).base64EncodedString()
            signatures.append("{\"keyid\": \"\(KeyDocumentTools.keyID(of: try key.publicKey))\", \"signature\": \"\(signature)\"}")
        }
        let envelope = Data("{\"signed\": \"\(payload.base64EncodedString())\", \"signatures\": [\(signatures.joined(separator: ", "))]}".utf8)
        _ = try KeyDocument(envelope: envelope)
        return envelope
    }
}

extension KeyDocumentTools {
    /// Key document `version` naming `keys` with `threshold`, signed by each of `signers`.
    package static func document(version: Int64, expires: Int64, threshold: Int, keys: [P256PublicKey],
                                 signers: [P256PrivateKey]) throws(PinStoreError) -> Data {
        let payload = KeyDocument.payload(version: version, expires: expires, threshold: threshold, keys: keys)
        return try KeyDocument.envelope(payload: payload, signers: signers)
    }
}
