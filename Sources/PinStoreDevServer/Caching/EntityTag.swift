import Foundation
import PinStore

/// An HTTP entity tag (RFC 9110, section 8.8.3): an opaque tag between double quotes, weak when
/// it carries the `W/` prefix.
///
/// The server makes strong tags only, from the SHA-256 of the exact bytes it serves, so two
/// responses carry the same tag exactly when their bodies are byte for byte the same, whichever
/// file, reload or process produced them.
package struct EntityTag: Sendable, Hashable {
    /// The characters between the quotes.
    package let opaqueTag: String
    /// Whether the tag carries the `W/` prefix.
    package let isWeak: Bool

    /// A tag as parsed from a request; `opaqueTag` must hold only `etagc` characters (not checked here).
    init(opaqueTag: String, isWeak: Bool) {
        self.opaqueTag = opaqueTag
        self.isWeak = isWeak
    }

    /// The strong tag of `body`: the lowercase hex SHA-256 of its bytes.
    package init(strongOf body: Data) {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(2 * SHA256Digest.byteCount)
        for byte in SHA256Digest.hash(body) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        self.init(opaqueTag: String(decoding: hex, as: UTF8.self), isWeak: false)
    }

    /// The tag as it goes into an `ETag` header: `"…"` or `W/"…"`.
    package var headerValue: String {
        (isWeak ? "W/" : "") + "\"" + opaqueTag + "\""
    }

    /// The weak comparison of RFC 9110, section 8.8.3.2, the one `If-None-Match` uses: the
    /// opaque tags are equal, whether either tag is weak or not.
    package func matchesWeakly(_ other: EntityTag) -> Bool {
        opaqueTag == other.opaqueTag
    }
}
