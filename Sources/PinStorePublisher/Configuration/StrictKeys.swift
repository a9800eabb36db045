import Foundation

/// Refusing the keys a publication file section does not know. JSONDecoder ignores unknown
/// keys, so a misspelt `"minimumSighting": 5` would silently leave the default of 3 in force:
/// for a file that decides what gets pinned, a typo must stop the publisher instead.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

/// Thrown by ``StrictKeys/check(_:known:secretLooking:)``; the publication file turns it into
/// ``PublisherError/Code/unknownKey`` or ``PublisherError/Code/inlineKeyMaterial``.
struct UnknownKeyError: Error {
    let path: [any CodingKey]
    /// True when the key's name says it holds key material (`privateKey`, `pem`...).
    let looksLikeKeyMaterial: Bool
}

/// Thrown when a value looks like inline key material.
struct InlineKeyMaterialError: Error {
    let path: [any CodingKey]
}

enum StrictKeys {
    /// Throws for the first key of the object being decoded that is not in `known`.
    static func check(_ decoder: any Decoder, known: Set<String>) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !known.contains(key.stringValue) {
            let name = key.stringValue.lowercased()
            let secret = ["private", "pem", "secret", "der", "passphrase"].contains { name.contains($0) } || name == "key"
            throw UnknownKeyError(path: decoder.codingPath + [key], looksLikeKeyMaterial: secret)
        }
    }

    /// `partners[2].sni`: a coding path as a person reads it.
    static func describe(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "the top level" : text
    }

    /// Whether a string given where a file path belongs looks like key material itself: a PEM
    /// block, or a long run of Base64 with no dot (a path to a key file has an extension or a
    /// short name; a Base64 P-256 key is 88 characters or more).
    static func looksLikeKeyMaterial(_ value: String) -> Bool {
        if value.contains("-----BEGIN") || value.contains("PRIVATE KEY") { return true }
        let base64 = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
        return value.count >= 40 && !value.contains(".") && value.unicodeScalars.allSatisfy { base64.contains($0) }
    }
}
