import Foundation

/// A property list value as read by FoundationEssentials' `PropertyListDecoder`, whose XML and
/// binary parsers are Swift. The importers used `PropertyListSerialization` before; on Linux
/// that is CoreFoundation's parser plus Objective-C-style bridging, which crashed on a binary
/// plist the fuzz target made (`swift_conformsToProtocol` while bridging an `NSSet`).
enum PropertyListValue: Decodable {
    case string(String)
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Values a property list may hold at most (an Info.plist has a few hundred): a binary
    /// plist may reference one object many times, so a few hundred bytes could otherwise unfold
    /// into billions of values (the fuzz target's 750-byte input ran for minutes).
    static let maximumValues = 100_000
    /// Nesting a property list may have at most (an Info.plist has under ten levels): the
    /// reading is recursive, and the stack is not unlimited.
    static let maximumDepth = 64

    /// How much of the budget one read has used. One read runs on one thread.
    final class Budget: @unchecked Sendable {
        // @unchecked: used by one synchronous decode only.
        var values = 0
        var depth = 0
    }

    struct TooLarge: Error, CustomStringConvertible {
        var description: String {
            "more than \(PropertyListValue.maximumValues) values or \(PropertyListValue.maximumDepth) levels of nesting; "
                + "an Info.plist has far fewer"
        }
    }

    /// The budget of the read under way (set by ``read(_:)``).
    @TaskLocal private static var budget: Budget?

    /// Reads `data` (XML or binary) within ``maximumValues`` and ``maximumDepth``.
    static func read(_ data: Data) throws -> PropertyListValue {
        try $budget.withValue(Budget()) {
            try PropertyListDecoder().decode(PropertyListValue.self, from: data)
        }
    }

    init(from decoder: any Decoder) throws {
        guard let budget = Self.budget else { throw TooLarge() }   // only read(_:) reads
        budget.values += 1
        budget.depth += 1
        defer { budget.depth -= 1 }
        guard budget.values <= Self.maximumValues, budget.depth <= Self.maximumDepth else { throw TooLarge() }
        if let keyed = try? decoder.container(keyedBy: Key.self) {
            var dictionary: [String: PropertyListValue] = [:]
            for key in keyed.allKeys {
                dictionary[key.stringValue] = try keyed.decode(PropertyListValue.self, forKey: key)
            }
            self = .dictionary(dictionary)
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var array: [PropertyListValue] = []
            while !unkeyed.isAtEnd {
                array.append(try unkeyed.decode(PropertyListValue.self))
            }
            self = .array(array)
            return
        }
        let single = try decoder.singleValueContainer()
        if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? single.decode(Double.self) {
            self = .real(value)
        } else if let value = try? single.decode(Date.self) {
            self = .date(value)
        } else if let value = try? single.decode(Data.self) {
            self = .data(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    /// The value as the plain Swift values the importers cast to (`String`, `Bool`, `Int`,
    /// `Double`, `Date`, `Data`, `[Any]`, `[String: Any]`).
    var plain: Any {
        switch self {
        case .string(let value): value
        case .bool(let value): value
        case .integer(let value): Int(exactly: value) ?? Double(value)
        case .real(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.plain)
        case .dictionary(let values): values.mapValues(\.plain)
        }
    }
}
