import Foundation

/// A duration in the publication file: a number of seconds (`600`), or a whole number with a
/// unit: `"90s"`, `"10m"`, `"2h"`, `"45d"` (seconds, minutes, hours, days of 86,400 seconds).
/// Nothing else (no `"1.5h"`, no `"1h30m"`, no weeks or months, whose length people disagree
/// on): a typo must be refused, never read as something else.
package struct PublicationDuration: Sendable, Hashable, Decodable, CustomStringConvertible {
    /// The duration in seconds.
    package let seconds: TimeInterval

    package init(seconds: TimeInterval) {
        self.seconds = seconds
    }

    /// Parses `"45d"`-style text; nil when it is not a whole number followed by s, m, h or d.
    package init?(text: String) {
        guard let unit = text.last, let multiplier = ["s": 1.0, "m": 60, "h": 3_600, "d": 86_400][String(unit)],
              let count = Int(text.dropLast()), count >= 0, String(count) == text.dropLast() else { return nil }
        seconds = Double(count) * multiplier
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            guard number.isFinite, number >= 0 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "a duration is a number of seconds >= 0")
            }
            seconds = number
            return
        }
        guard let text = try? container.decode(String.self), let parsed = PublicationDuration(text: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a duration is a number of seconds or a whole number with a unit: \"90s\", \"10m\", \"2h\", \"45d\"")
        }
        self = parsed
    }

    /// The shortest exact text: `"45d"`, `"2h"`, `"10m"` or `"90s"`.
    package var description: String {
        let whole = Int(seconds)
        guard Double(whole) == seconds else { return "\(seconds)s" }
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] where whole != 0 && whole % size == 0 {
            return "\(whole / size)\(unit)"
        }
        return "\(whole)s"
    }
}
