import Foundation

/// Strict Base64 (standard alphabet, padded) through Foundation's decoder.
enum Base64 {
    /// Decodes `text`, refusing anything that is not canonical standard Base64.
    ///
    /// Surrounding white space is tolerated (keys are pasted from files); anything else that
    /// Foundation's decoder would not accept, or an encoding that does not round-trip (non-zero
    /// padding bits), is refused, so one value has exactly one accepted spelling.
    static func decodeStrict(_ text: String) -> Data? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, let data = Data(base64Encoded: trimmed) else { return nil }
        guard data.base64EncodedString() == trimmed else { return nil }
        return data
    }
}
