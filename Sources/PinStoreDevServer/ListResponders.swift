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
    /// the path, or `304 Not Modified` without a body to a `GET` or `HEAD` whose conditions say
    /// the client holds these bytes.
    ///
    /// Every answer carries `ETag` (the SHA-256 of `body`, strong), `Last-Modified` (when
    /// `tracker` first served these bytes), `Date` and ``cacheableCacheControl``. A server that
    /// reloads its list passes the same `tracker` to each new responder, so identical bytes keep
    /// their `Last-Modified` (see ``RepresentationTracker``).
    package static func staticList(_ body: Data, tracker: RepresentationTracker = RepresentationTracker()) -> ListServerResponder {
        let entityTag = EntityTag(strongOf: body)
        return { request in
            cacheableResponse(to: request, body: body, entityTag: entityTag, contentType: "application/json", tracker: tracker)
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
    /// Never `304`, whatever the request's conditions, and every answer carries
    /// ``challengeCacheControl`` (`no-store`) and no validators: each response is signed over one
    /// client's challenge and is good for that request only.
    ///
    /// With `additionalKeys` (a key set with a threshold), each of them also signs, in the
    /// `X-PinStore-Signatures` header (`keyid:Base64` pairs).
    package static func challengeList(body: Data, signingKey: P256PrivateKey,
                                      additionalKeys: [P256PrivateKey] = []) -> ListServerResponder {
        let signer = FingerprintListSigner(privateKey: signingKey, additionalKeys: additionalKeys)
        return { request in
            guard let challenge = request.header(challengeHeader) else {
                return plainText(400, "missing \(challengeHeader) header: this server is in challenge mode\n", cacheControl: challengeCacheControl)
            }
            guard let bytes = Data(base64Encoded: challenge), acceptedChallengeLengths.contains(bytes.count) else {
                return plainText(400, "\(challengeHeader) must be Base64 of \(acceptedChallengeLengths.lowerBound) to \(acceptedChallengeLengths.upperBound) random bytes\n",
                                 cacheControl: challengeCacheControl)
            }
            do {
                let signature = try signer.challengeResponseSignature(challenge: challenge, body: body)
                var headers = [("Content-Type", "application/json"), ("Cache-Control", challengeCacheControl), (signatureHeader, signature)]
                if let extra = try signer.challengeResponseExtraSignatures(challenge: challenge, body: body) {
                    headers.append((FingerprintListSigner.extraSignaturesHeader, extra))
                }
                return ListServerResponse(status: 200, headers: headers, body: body)
            } catch {
                return plainText(500, "signing failed: \(error)\n", cacheControl: challengeCacheControl)
            }
        }
    }

    /// The path key documents are served at, beside the list.
    package static let keyDocumentPath = "/keys.json"

    /// Answers `GET /keys.json` with `keyDocuments()` (a served key document file, read per
    /// request so a test or operator can publish a new version without a restart) and every
    /// other request with `list`.
    ///
    /// Key documents are cached like a static list: `ETag` (their SHA-256), `Last-Modified`
    /// (when `tracker` first served these bytes), ``cacheableCacheControl``, and `304` to a
    /// matching conditional `GET`.
    package static func withKeyDocuments(_ keyDocuments: @escaping @Sendable () -> Data,
                                         tracker: RepresentationTracker = RepresentationTracker(),
                                         list: @escaping ListServerResponder) -> ListServerResponder {
        { request in
            guard request.uri.split(separator: "?").first.map(String.init) == keyDocumentPath else { return list(request) }
            let body = keyDocuments()
            return cacheableResponse(to: request, body: body, entityTag: EntityTag(strongOf: body),
                                     contentType: "application/json", tracker: tracker)
        }
    }

    private static func plainText(_ status: Int, _ text: String, cacheControl: String) -> ListServerResponse {
        ListServerResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", cacheControl)],
                           body: Data(text.utf8))
    }
}
