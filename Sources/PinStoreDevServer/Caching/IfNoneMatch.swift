/// A request's `If-None-Match` condition (RFC 9110, section 13.1.2), parsed once from every
/// field line the request carried.
///
/// The header comes from whoever sends the request, so parsing is bounded: at most
/// ``maximumFieldLength`` bytes are looked at, each once, and anything that is not the
/// grammar (`"*"` or a comma-separated list of `"tag"` / `W/"tag"`) is ``unusable``. An
/// unusable condition matches nothing, so the worst a malformed header can cause is a full
/// `200` response, never a `304` for bytes the client does not hold.
///
/// A closed set: the three shapes the field can take.
package enum IfNoneMatch: Sendable, Equatable {
    /// `*`: matches any current representation.
    case anyRepresentation
    /// A list of entity tags (possibly empty).
    case tags([EntityTag])
    /// Malformed, or longer than ``maximumFieldLength``: matches nothing.
    case unusable

    /// Bytes of `If-None-Match` (all field lines together) parsed at most. A client revalidating
    /// one cached list sends one tag of 66 bytes; a CDN may send a few.
    package static let maximumFieldLength = 8_192

    /// The condition carried by `fieldValues`, the values of every `If-None-Match` field line
    /// in the order received (several lines form one comma-separated list, RFC 9110 5.3).
    package init(fieldValues: [String]) {
        var length = max(fieldValues.count - 1, 0)   // the commas joining the lines
        for value in fieldValues {
            length += value.utf8.count
            guard length <= Self.maximumFieldLength else {
                self = .unusable
                return
            }
        }
        let bytes = Array(fieldValues.joined(separator: ",").utf8)
        self = Self.parse(bytes)
    }

    /// Whether the condition matches a resource whose current representation has `current`:
    /// the weak comparison, as RFC 9110 requires for `If-None-Match`.
    package func matches(_ current: EntityTag) -> Bool {
        switch self {
        case .anyRepresentation: true
        case .tags(let tags): tags.contains { $0.matchesWeakly(current) }
        case .unusable: false
        }
    }

    private static let quote = UInt8(ascii: "\"")
    private static let comma = UInt8(ascii: ",")

    private static func isOptionalWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// `etagc` of RFC 9110: `%x21 / %x23-7E / obs-text`.
    private static func isEntityTagCharacter(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23...0x7e).contains(byte) || byte >= 0x80
    }

    private static func parse(_ bytes: [UInt8]) -> IfNoneMatch {
        var start = 0
        var end = bytes.count
        while start < end, isOptionalWhitespace(bytes[start]) { start += 1 }
        while end > start, isOptionalWhitespace(bytes[end - 1]) { end -= 1 }
        if end - start == 1, bytes[start] == UInt8(ascii: "*") {
            return .anyRepresentation
        }
        var tags: [EntityTag] = []
        var index = start
        // Each turn consumes at least one byte or returns, so the loop ends within `end` turns.
        while index < end {
            let byte = bytes[index]
            if isOptionalWhitespace(byte) || byte == comma {
                index += 1   // separators, and the empty elements a list may carry (RFC 9110 5.6.1)
                continue
            }
            var isWeak = false
            if byte == UInt8(ascii: "W") {
                guard index + 1 < end, bytes[index + 1] == UInt8(ascii: "/") else { return .unusable }
                isWeak = true
                index += 2
            }
            guard index < end, bytes[index] == quote else { return .unusable }
            index += 1
            let tagStart = index
            while index < end, isEntityTagCharacter(bytes[index]) { index += 1 }
            guard index < end, bytes[index] == quote else { return .unusable }
            tags.append(EntityTag(opaqueTag: String(decoding: bytes[tagStart..<index], as: UTF8.self), isWeak: isWeak))
            index += 1
            while index < end, isOptionalWhitespace(bytes[index]) { index += 1 }
            guard index == end || bytes[index] == comma else { return .unusable }
        }
        return .tags(tags)
    }
}
