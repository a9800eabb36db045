import Foundation

/// Makes signed fingerprint lists in the wire format (`../shared/notes/wire-format.md`): the
/// server side of ``ListSignatureVerifier``, for the command-line tool, the development list
/// server and tests. Apps never sign; they only verify.
///
/// ```swift
/// let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: keyPEM))
/// let entry = FingerprintEntry(name: "api.example.com", fingerprint: sha256OfLeafDER, expires: 1_900_000_000)
/// let staticListJSON = try signer.staticList([entry])          // every entry signed
/// let body = try FingerprintListSigner.challengeModeBody([entry], timestamp: 1_767_225_600)
/// let header = try signer.challengeResponseSignature(challenge: challengeHeader, body: body)
/// ```
package struct FingerprintListSigner: Sendable {
    /// The key whose public half the apps configure: it makes the per-entry signatures and
    /// `listSignature`, which the deployed clients and single-key stores read.
    package let privateKey: P256PrivateKey
    /// Further keys of a key set: each adds a labelled whole-list signature
    /// (`listSignatures`, see ``WholeListSignature``).
    package let additionalKeys: [P256PrivateKey]

    /// Creates a signer for `privateKey`, plus `additionalKeys` for a key set with a threshold.
    package init(privateKey: P256PrivateKey, additionalKeys: [P256PrivateKey] = []) {
        self.privateKey = privateKey
        self.additionalKeys = additionalKeys
    }

    /// The DER ECDSA-SHA256 signature of one entry's ``FingerprintEntry/signedBytes``
    /// (`name&base64(fingerprint)&expires`), as a static list carries it (after Base64).
    package func signature(for entry: FingerprintEntry) throws(PinStoreError) -> Data {
        try privateKey.signature(for: entry.signedBytes)
    }

    /// A complete static-mode list: `{"fingerprints":[...]}` with every entry signed.
    ///
    /// Members are written in a fixed order (`name`, `fingerprint`, `expires`, `depth` when it is
    /// not 0, `signature`), one entry per line, so that lists diff well under version control.
    /// The result is parsed back with the parser clients use, so a list that clients would
    /// refuse (an empty name, a fingerprint that is not 32 bytes, an impossible `expires`, a
    /// duplicate entry) is refused here, before anyone serves it.
    ///
    /// With a `timestamp`, the list also carries a whole-list signature (``WholeListSignature``)
    /// over the exact body, timestamp included: deployed clients ignore it, PinStore verifies
    /// it and refuses lists older than the newest it has seen.
    ///
    /// `version` and `expires` (the whole list's, see the README's "Key documents and list
    /// expiry") need the whole-list signature too, so they need a `timestamp`.
    ///
    /// `certificateTransparency` is a section made by ``CertificateTransparencyTools`` (JSON);
    /// it needs the whole-list signature too.
    package func staticList(_ entries: [FingerprintEntry], timestamp: Int64? = nil,
                            version: Int64? = nil, expires: Int64? = nil,
                            certificateTransparency: Data? = nil) throws(PinStoreError) -> Data {
        var lines: [String] = []
        lines.reserveCapacity(entries.count)
        for entry in entries {
            let signature = try signature(for: entry)
            lines.append(Self.entryObject(entry, signature: signature))
        }
        guard let timestamp else {
            if version != nil || expires != nil || !additionalKeys.isEmpty || certificateTransparency != nil {
                throw PinStoreError(.invalidListData, "A list version, expiry, Certificate Transparency section or several signing keys need the whole-list signature; sign with a timestamp.")
            }
            // Clients drop key pins that no whole-list signature covers (the per-entry signature
            // does not cover the `pin` member): refuse to make a list that would pin nothing.
            if entries.contains(where: { $0.kind != .certificate }) {
                throw PinStoreError(.invalidListData, "Key pins (\"pin\": \"spki\" or \"ca-spki\") need the whole-list signature, which covers that member; sign with a timestamp.")
            }
            let json = Self.document(members: [], entryLines: lines)
            try Self.checkClientsAccept(json)
            return json
        }
        var members = ["\"\(WholeListSignature.member)\": \"\""]
        if !additionalKeys.isEmpty { members.append("\"\(WholeListSignature.extraMember)\": []") }
        if let version { members.append("\"version\": \(version)") }
        if let expires { members.append("\"expires\": \(expires)") }
        if let certificateTransparency {
            members.append("\"certificateTransparency\": \(String(decoding: try CertificateTransparencyTools.checkedSection(certificateTransparency), as: UTF8.self))")
        }
        members.append("\"timestamp\": \(timestamp)")
        let unsigned = Self.document(members: members, entryLines: lines)
        try Self.checkClientsAccept(unsigned)
        return try WholeListSignature.sign(unsigned, with: [privateKey] + additionalKeys)
    }

    /// A challenge-mode response body: `{"timestamp":...,"fingerprints":[...]}` without per-entry
    /// signatures (the response signature covers the whole body). The body does not depend on
    /// the key, so this is static; sign it per request with ``challengeResponseSignature(challenge:body:)``.
    package static func challengeModeBody(_ entries: [FingerprintEntry], timestamp: Int64,
                                          version: Int64? = nil, expires: Int64? = nil,
                                          certificateTransparency: Data? = nil) throws(PinStoreError) -> Data {
        let lines = entries.map { entryObject($0, signature: nil) }
        var members: [String] = []
        if let version { members.append("\"version\": \(version)") }
        if let expires { members.append("\"expires\": \(expires)") }
        if let certificateTransparency {
            members.append("\"certificateTransparency\": \(String(decoding: try CertificateTransparencyTools.checkedSection(certificateTransparency), as: UTF8.self))")
        }
        members.append("\"timestamp\": \(timestamp)")
        let json = document(members: members, entryLines: lines)
        try checkClientsAccept(json)
        return json
    }

    /// The `X-Cert-Pinning-Signature` value for one challenge-mode response: Base64 of the DER
    /// ECDSA-SHA256 signature over UTF-8(`challenge` exactly as the client sent it) + `"&"` + `body`.
    package func challengeResponseSignature(challenge: String, body: Data) throws(PinStoreError) -> String {
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(body)
        return try privateKey.signature(for: signed).base64EncodedString()
    }

    /// The `X-PinStore-Signatures` value for one challenge-mode response of a key set: each of
    /// ``additionalKeys``' signature over the same bytes as ``challengeResponseSignature(challenge:body:)``,
    /// as `keyid:Base64` pairs separated by commas. Nil without additional keys.
    package func challengeResponseExtraSignatures(challenge: String, body: Data) throws(PinStoreError) -> String? {
        guard !additionalKeys.isEmpty else { return nil }
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(body)
        var pairs: [String] = []
        for key in additionalKeys {
            pairs.append("\(ListKeySet.keyID(of: try key.publicKey)):\(try key.signature(for: signed).base64EncodedString())")
        }
        return pairs.joined(separator: ", ")
    }

    /// The header carrying ``challengeResponseExtraSignatures(challenge:body:)``.
    package static let extraSignaturesHeader = ListVerifier.extraSignaturesHeader

    // MARK: - JSON

    private static func entryObject(_ entry: FingerprintEntry, signature: Data?) -> String {
        var members = [
            "\"name\": \(jsonString(entry.name))",
            "\"fingerprint\": \(jsonString(entry.fingerprint.base64EncodedString()))",
            "\"expires\": \(entry.expires)",
        ]
        if entry.depth != 0 {
            members.append("\"depth\": \(entry.depth)")
        }
        if entry.kind != .certificate {
            members.append("\"pin\": \(jsonString(entry.kind.rawValue))")
        }
        if let signature {
            members.append("\"signature\": \(jsonString(signature.base64EncodedString()))")
        }
        return "{" + members.joined(separator: ", ") + "}"
    }

    private static func document(members: [String], entryLines: [String]) -> Data {
        var text = "{\n"
        for member in members {
            text += "  \(member),\n"
        }
        if entryLines.isEmpty {
            text += "  \"fingerprints\": []\n"
        } else {
            text += "  \"fingerprints\": [\n    " + entryLines.joined(separator: ",\n    ") + "\n  ]\n"
        }
        text += "}\n"
        return Data(text.utf8)
    }

    /// A JSON string literal for `value`, escaped by Foundation's encoder (names may hold any
    /// character a server operator typed; the parser decides whether it is acceptable).
    private static func jsonString(_ value: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            // Encoding a String cannot fail; an empty literal keeps the document well formed and
            // the parse-back check then reports the entry.
            return "\"\""
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func checkClientsAccept(_ json: Data) throws(PinStoreError) {
        do {
            let document = try FingerprintListDocument(body: json)
            _ = try document.certificateTransparency.map(CTLogList.init)
        } catch {
            throw PinStoreError(error.code, "Refusing to sign a list that clients would reject: \(error.reason)")
        }
    }
}

// MARK: - Reading back

/// Reading lists back with the clients' own parser and verifier, so that tools (`pinstore
/// verify`, `pinstore serve`) judge a list exactly as apps will.
extension FingerprintListSigner {
    /// One entry as parsed, with the per-entry signature it carried (nil when absent).
    package struct ReadBackEntry: Sendable {
        /// The parsed entry.
        package let entry: FingerprintEntry
        /// The `signature` member as served, not yet checked.
        package let signature: String?
    }

    /// A list as parsed by the clients' strict parser, not yet verified.
    package struct ReadBackList: Sendable {
        /// The entries in list order.
        package let entries: [ReadBackEntry]
        /// The challenge-mode `timestamp`, when the body has one.
        package let timestamp: Int64?
    }

    /// Parses `body` as clients do; throws ``PinStoreError/Code/invalidListData`` saying what
    /// is wrong.
    package static func readBack(_ body: Data) throws(PinStoreError) -> ReadBackList {
        let document = try FingerprintListDocument(body: body)
        return ReadBackList(entries: document.entries.map { ReadBackEntry(entry: $0.entry, signature: $0.signature) },
                            timestamp: document.timestamp)
    }

    /// The timestamp a static list's whole-list signature covers, nil when the list has no
    /// such signature; throws when it has one that does not verify (``WholeListSignature``).
    package static func wholeListSignatureTimestamp(_ body: Data, publicKey: P256PublicKey) throws(PinStoreError) -> Int64? {
        let document = try FingerprintListDocument(body: body)
        return try ListSignatureVerifier(publicKey: publicKey).verifyWholeList(body: body, document: document, required: false)
    }

    /// Whether one static-mode entry's signature verifies, by the clients' rules (strict
    /// Base64; DER, or raw `r||s` as a convenience).
    package static func entrySignatureIsValid(_ signature: String?, for entry: FingerprintEntry, publicKey: P256PublicKey) -> Bool {
        guard let signature, let bytes = Base64.decodeStrict(signature) else { return false }
        return ListSignatureVerifier(publicKey: publicKey).verify(bytes, entry.signedBytes)
    }

    /// Verifies a challenge-mode response exactly as clients do: the response signature over
    /// `challenge & body`, then the body's format.
    package static func verifyChallengeResponse(_ body: Data, challenge: String, signatureHeader: String?, publicKey: P256PublicKey) throws(PinStoreError) -> ReadBackList {
        try ListSignatureVerifier(publicKey: publicKey).verifyChallenge(body: body, challenge: challenge, signatureHeader: signatureHeader)
        return try readBack(body)
    }
}
