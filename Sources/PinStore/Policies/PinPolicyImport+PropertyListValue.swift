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

    init(from decoder: any Decoder) throws {
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
