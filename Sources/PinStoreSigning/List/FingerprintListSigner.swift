import Foundation
import PinStore

/// Makes signed fingerprint lists in the wire format a `PinStore` reads: the server side of the
/// store's list verification, for the `pinstore` tool, the development list server, the test kit
/// and teams that sign lists from their own Swift code. Apps never sign; they only verify (and
/// never link this module).
///
/// Every list made is first read back with the parser the clients use, so a list that clients
/// would refuse is refused here, before anyone serves it.
///
/// ```swift
/// import PinStore
/// import PinStoreSigning
///
/// let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: keyPEM))
/// let entry = FingerprintEntry(name: "api.example.com", fingerprint: sha256OfLeafDER, expires: 1_900_000_000)
/// // A static list: every entry signed, plus the whole-list signature over the body and its
/// // timestamp (a store with `requireListSignature` wants it; newer stores refuse older lists).
/// let list = try signer.staticList([entry], timestamp: Int64(Date().timeIntervalSince1970), version: 8)
///
/// // Challenge mode: one body, signed per request over the client's challenge.
/// let body = try FingerprintListSigner.challengeModeBody([entry], timestamp: 1_767_225_600)
/// let header = try signer.challengeResponseSignature(challenge: challengeHeader, body: body)
/// ```
public struct FingerprintListSigner: Sendable {
    /// The key whose public half the apps configure: it makes the per-entry signatures and
    /// `listSignature`, which the deployed clients and single-key stores read.
    public let privateKey: P256PrivateKey
    /// Further keys of a key set: each adds a labelled whole-list signature (the
    /// `listSignatures` member), for stores configured with a signature threshold.
    public let additionalKeys: [P256PrivateKey]

    /// Creates a signer for `privateKey`, plus `additionalKeys` for a key set with a threshold.
    public init(privateKey: P256PrivateKey, additionalKeys: [P256PrivateKey] = []) {
        self.privateKey = privateKey
        self.additionalKeys = additionalKeys
    }

    /// The DER ECDSA-SHA256 signature of one entry's `signedBytes`
    /// (`name&base64(fingerprint)&expires`), as a static list carries it (after Base64).
    public func signature(for entry: FingerprintEntry) throws(PinStoreError) -> Data {
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
    /// With a `timestamp`, the list also carries a whole-list signature (`listSignature`, and
    /// `listSignatures` for ``additionalKeys``) over the exact body, timestamp included:
    /// deployed clients ignore it, PinStore verifies it and refuses lists older than the newest
    /// it has seen.
    ///
    /// `version` and `expires` (the whole list's, see the README's "Key documents and list
    /// expiry") need the whole-list signature too, so they need a `timestamp`.
    ///
    /// `certificateTransparency` is a section file (JSON, as `pinstore ct convert` writes it);
    /// it is checked as a store checks it, and needs the whole-list signature too.
    ///
    /// - Throws: `PinStoreError` with `invalidListData` when clients would refuse the list or
    ///   a member needs the whole-list signature and no `timestamp` was given; an OpenSSL
    ///   failure while signing.
    public func staticList(_ entries: [FingerprintEntry], timestamp: Int64? = nil,
                           version: Int64? = nil, expires: Int64? = nil,
                           certificateTransparency: Data? = nil) throws(PinStoreError) -> Data {
        try staticList(entries, timestamp: timestamp, version: version, expires: expires, certificateTransparency: certificateTransparency,
                       revocations: [])
    }

    /// ``staticList(_:timestamp:version:expires:certificateTransparency:)`` carrying a
    /// `revocations` section (``ListRevocations``) and a `crl` section (``CRLHostList``), which
    /// need the whole-list signature too.
    package func staticList(_ entries: [FingerprintEntry], timestamp: Int64?, version: Int64?, expires: Int64?,
                            certificateTransparency: Data?, revocations: [ListRevocations.Wire],
                            crl: CRLHostList.Wire? = nil) throws(PinStoreError) -> Data {
        var lines: [String] = []
        lines.reserveCapacity(entries.count)
        for entry in entries {
            let signature = try signature(for: entry)
            lines.append(Self.entryObject(entry, signature: signature))
        }
        guard let timestamp else {
            if version != nil || expires != nil || !additionalKeys.isEmpty || certificateTransparency != nil || !revocations.isEmpty || crl != nil {
                throw PinStoreError(.invalidListData, "A list version, expiry, Certificate Transparency section, revocations, crl section or several signing keys need the whole-list signature; sign with a timestamp.")
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
        let unsigned = try Self.unsignedStaticList(entryLines: lines, timestamp: timestamp, version: version, expires: expires,
                                                   certificateTransparency: certificateTransparency, revocations: revocations,
                                                   crl: crl, labelledSignatures: !additionalKeys.isEmpty)
        return try WholeListSignature.sign(unsigned, with: [privateKey] + additionalKeys)
    }

    /// A static list whose entries carry the given per-entry signatures (DER, over each entry's
    /// `signedBytes`) and whose whole-list signature members are still empty
    /// (`"listSignature": ""`, and `"listSignatures": []` when `labelledSignatures`): for
    /// signers whose keys are not in this process (the publisher's command signers and
    /// co-signing vantage points), which fill them in through ``WholeListSignature``'s steps.
    /// Checked with the clients' parser like ``staticList(_:timestamp:version:expires:certificateTransparency:)``.
    package static func unsignedStaticList(_ entries: [(entry: FingerprintEntry, signature: Data)], timestamp: Int64,
                                           version: Int64?, expires: Int64?, certificateTransparency: Data?,
                                           revocations: [ListRevocations.Wire] = [], crl: CRLHostList.Wire? = nil,
                                           labelledSignatures: Bool) throws(PinStoreError) -> Data {
        try unsignedStaticList(entryLines: entries.map { entryObject($0.entry, signature: $0.signature) }, timestamp: timestamp,
                               version: version, expires: expires, certificateTransparency: certificateTransparency,
                               revocations: revocations, crl: crl, labelledSignatures: labelledSignatures)
    }

    private static func unsignedStaticList(entryLines lines: [String], timestamp: Int64, version: Int64?, expires: Int64?,
                                           certificateTransparency: Data?, revocations: [ListRevocations.Wire],
                                           crl: CRLHostList.Wire?, labelledSignatures: Bool) throws(PinStoreError) -> Data {
        var members = ["\"\(WholeListSignature.member)\": \"\""]
        if labelledSignatures { members.append("\"\(WholeListSignature.extraMember)\": []") }
        if let version { members.append("\"version\": \(version)") }
        if let expires { members.append("\"expires\": \(expires)") }
        if let certificateTransparency {
            members.append("\"certificateTransparency\": \(String(decoding: try CertificateTransparencyTools.checkedSection(certificateTransparency), as: UTF8.self))")
        }
        if let section = try revocationsMember(revocations) { members.append(section) }
        if let crl { members.append(try crlMember(crl)) }
        members.append("\"timestamp\": \(timestamp)")
        let unsigned = document(members: members, entryLines: lines)
        try checkClientsAccept(unsigned)
        return unsigned
    }

    /// A challenge-mode response body: `{"timestamp":...,"fingerprints":[...]}` without per-entry
    /// signatures (the response signature covers the whole body). The body does not depend on
    /// the key, so this is static; sign it per request with ``challengeResponseSignature(challenge:body:)``.
    public static func challengeModeBody(_ entries: [FingerprintEntry], timestamp: Int64,
                                         version: Int64? = nil, expires: Int64? = nil,
                                         certificateTransparency: Data? = nil) throws(PinStoreError) -> Data {
        try challengeModeBody(entries, timestamp: timestamp, version: version, expires: expires,
                              certificateTransparency: certificateTransparency, revocations: [])
    }

    /// ``challengeModeBody(_:timestamp:version:expires:certificateTransparency:)`` carrying a
    /// `revocations` section (``ListRevocations``) and a `crl` section (``CRLHostList``), covered
    /// by the response signature.
    package static func challengeModeBody(_ entries: [FingerprintEntry], timestamp: Int64, version: Int64?, expires: Int64?,
                                          certificateTransparency: Data?, revocations: [ListRevocations.Wire],
                                          crl: CRLHostList.Wire? = nil) throws(PinStoreError) -> Data {
        let lines = entries.map { entryObject($0, signature: nil) }
        var members: [String] = []
        if let version { members.append("\"version\": \(version)") }
        if let expires { members.append("\"expires\": \(expires)") }
        if let certificateTransparency {
            members.append("\"certificateTransparency\": \(String(decoding: try CertificateTransparencyTools.checkedSection(certificateTransparency), as: UTF8.self))")
        }
        if let section = try revocationsMember(revocations) { members.append(section) }
        if let crl { members.append(try crlMember(crl)) }
        members.append("\"timestamp\": \(timestamp)")
        let json = document(members: members, entryLines: lines)
        try checkClientsAccept(json)
        return json
    }

    /// The `X-Cert-Pinning-Signature` value for one challenge-mode response: Base64 of the DER
    /// ECDSA-SHA256 signature over UTF-8(`challenge` exactly as the client sent it) + `"&"` + `body`.
    public func challengeResponseSignature(challenge: String, body: Data) throws(PinStoreError) -> String {
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(body)
        return try privateKey.signature(for: signed).base64EncodedString()
    }

    /// The `X-PinStore-Signatures` value for one challenge-mode response of a key set: each of
    /// ``additionalKeys``' signature over the same bytes as ``challengeResponseSignature(challenge:body:)``,
    /// as `keyid:Base64` pairs separated by commas. Nil without additional keys.
    public func challengeResponseExtraSignatures(challenge: String, body: Data) throws(PinStoreError) -> String? {
        guard !additionalKeys.isEmpty else { return nil }
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(body)
        var pairs: [String] = []
        for key in additionalKeys {
            pairs.append("\(KeyDocumentTools.keyID(of: try key.publicKey)):\(try key.signature(for: signed).base64EncodedString())")
        }
        return pairs.joined(separator: ", ")
    }

    /// The header carrying ``challengeResponseExtraSignatures(challenge:body:)``
    /// (`X-PinStore-Signatures`).
    public static let extraSignaturesHeader = ListVerifier.extraSignaturesHeader

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

    /// `"revocations": [...]`, one entry per line; nil for none (the member is left out, so a
    /// list without revocations is byte for byte what it was before the section existed).
    private static func revocationsMember(_ revocations: [ListRevocations.Wire]) throws(PinStoreError) -> String? {
        guard !revocations.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        var lines: [String] = []
        for revocation in revocations {
            do {
                lines.append(String(decoding: try encoder.encode(revocation), as: UTF8.self))
            } catch {
                throw PinStoreError(.invalidListData, "A revocation could not be written as JSON: \(error)")
            }
        }
        return "\"revocations\": [\n    " + lines.joined(separator: ",\n    ") + "\n  ]"
    }

    /// `"crl": {"hosts": [...]}` on one line. The parse-back check reads it with the stores'
    /// reader (``CRLHostList``), so a mode or name stores refuse is refused here.
    private static func crlMember(_ crl: CRLHostList.Wire) throws(PinStoreError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        do {
            return "\"crl\": " + String(decoding: try encoder.encode(crl), as: UTF8.self)
        } catch {
            throw PinStoreError(.invalidListData, "The crl section could not be written as JSON: \(error)")
        }
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
            try ListReadBack.checkClientsAccept(json)
        } catch {
            throw PinStoreError(error.code, "Refusing to sign a list that clients would reject: \(error.reason)")
        }
    }
}
