import Foundation
import PinStore
import PinStoreSigning

/// Ready-made responders that answer like the deployed list servers.
package enum ListResponders {
    /// The request header carrying the client's challenge in challenge mode.
    package static let challengeHeader = "X-Cert-Pinning-Challenge"
    /// The response header carrying the signature over `challenge & body` in challenge mode.
    package static let signatureHeader = "X-Cert-Pinning-Signature"
    /// Challenge sizes (decoded bytes) that deployed servers accept; clients send 16.
    package static let acceptedChallengeLengths = 16...32

    /// Static mode: `200` with `body` (a signed static list) as `application/json`, whatever
    /// the request.
    package static func staticList(_ body: Data) -> ListServerResponder {
        { _ in
            ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
        }
    }

    /// Challenge mode, as the deployed challenge-mode server answers: reads the
    /// `X-Cert-Pinning-Challenge` header and answers `200` with `body` and an
    /// `X-Cert-Pinning-Signature` header holding Base64 of the DER ECDSA-SHA256 signature over
    /// UTF-8(challenge) + `"&"` + `body`, made with `signingKey`.
    ///
    /// A request without the header, or whose header is not Base64 of 16 to 32 bytes, gets
    /// `400` with a one-line explanation.
    ///
    /// With `additionalKeys` (a key set with a threshold), each of them also signs, in the
    /// `X-PinStore-Signatures` header (`keyid:Base64` pairs).
    package static func challengeList(body: Data, signingKey: P256PrivateKey,
                                      additionalKeys: [P256PrivateKey] = []) -> ListServerResponder {
        let signer = FingerprintListSigner(privateKey: signingKey, additionalKeys: additionalKeys)
        return { request in
            guard let challenge = request.header(challengeHeader) else {
                return plainText(400, "missing \(challengeHeader) header: this server is in challenge mode\n")
            }
            guard let bytes = Data(base64Encoded: challenge), acceptedChallengeLengths.contains(bytes.count) else {
                return plainText(400, "\(challengeHeader) must be Base64 of \(acceptedChallengeLengths.lowerBound) to \(acceptedChallengeLengths.upperBound) random bytes\n")
            }
            do {
                let signature = try signer.challengeResponseSignature(challenge: challenge, body: body)
                var headers = [("Content-Type", "application/json"), (signatureHeader, signature)]
                if let extra = try signer.challengeResponseExtraSignatures(challenge: challenge, body: body) {
                    headers.append((FingerprintListSigner.extraSignaturesHeader, extra))
                }
                return ListServerResponse(status: 200, headers: headers, body: body)
            } catch {
                return plainText(500, "signing failed: \(error)\n")
            }
        }
    }

    /// The path key documents are served at, beside the list.
    package static let keyDocumentPath = "/keys.json"

    /// Answers `GET /keys.json` with `keyDocuments()` (a served key document file, read per
    /// request so a test or operator can publish a new version without a restart) and every
    /// other request with `list`.
    package static func withKeyDocuments(_ keyDocuments: @escaping @Sendable () -> Data,
                                         list: @escaping ListServerResponder) -> ListServerResponder {
        { request in
            guard request.uri.split(separator: "?").first.map(String.init) == keyDocumentPath else { return list(request) }
            return ListServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: keyDocuments())
        }
    }

    private static func plainText(_ status: Int, _ text: String) -> ListServerResponse {
        ListServerResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Data(text.utf8))
    }
}
