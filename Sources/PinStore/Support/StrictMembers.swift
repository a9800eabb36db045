/// For a strictly read JSON object: an unknown member is refused, not ignored, where a setting
/// could hide in it (a mode beside the hosts would be read by nobody).
enum StrictMembers {
    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Throws a `DecodingError` naming the first member of the object `decoder` holds that is
    /// not in `known`; `why` says what the object holds.
    static func refuseUnknown(in decoder: any Decoder, known: Set<String>, _ why: String) throws {
        let all = try decoder.container(keyedBy: AnyKey.self)
        if let unknown = all.allKeys.first(where: { !known.contains($0.stringValue) }) {
            throw DecodingError.dataCorruptedError(forKey: unknown, in: all,
                debugDescription: "\(why); \"\(unknown.stringValue)\" is not read, and a setting must not hide in it")
        }
    }
}
