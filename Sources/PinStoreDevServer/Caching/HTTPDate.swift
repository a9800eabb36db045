import Foundation

/// HTTP dates (RFC 9110, section 5.6.7): written as IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`); read in the three formats a recipient must accept, the
/// IMF-fixdate and the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`) formats.
///
/// Reading is for request headers, so it is bounded and never traps: a value longer than
/// ``maximumLength`` bytes, with a field out of range (`31 Feb`, hour `24`) or in any other shape
/// is not a date (`nil`), and the caller ignores the header it came in. Names are
/// case-sensitive, as the grammar says. The day name is checked for its form only: RFC 9110
/// does not make a recipient check it against the date.
package enum HTTPDate {
    /// Bytes read at most; the longest valid value, an RFC 850 date on a Wednesday, has 33.
    package static let maximumLength = 64

    private static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDayNames = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` as an IMF-fixdate, to the whole second below it.
    package static func string(from date: Date) -> String {
        let seconds = wholeSeconds(date)
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        // 1 January 1970 was a Thursday (index 3 in `dayNames`).
        let weekday = Int(floorModulo(days + 3, 7))
        return "\(dayNames[weekday]), \(twoDigits(day)) \(monthNames[month - 1]) \(year) "
            + "\(twoDigits(secondOfDay / 3_600)):\(twoDigits(secondOfDay / 60 % 60)):\(twoDigits(secondOfDay % 60)) GMT"
    }

    /// The date `text` holds in one of the three formats, or nil. `now` places the two-digit
    /// year of an RFC 850 date: a year that looks more than 50 years ahead of `now` is the
    /// latest past year with the same last two digits (RFC 9110, section 5.6.7).
    package static func date(from text: some StringProtocol, now: Date) -> Date? {
        guard text.utf8.count <= maximumLength else { return nil }
        var bytes = Array(text.utf8)[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        return imfFixdate(bytes) ?? rfc850Date(bytes, now: now) ?? asctimeDate(bytes)
    }

    // MARK: The three formats

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ bytes: ArraySlice<UInt8>) -> Date? {
        var reader = Reader(bytes)
        guard reader.name(in: dayNames) != nil, reader.literal(", "),
              let day = reader.digits(2), reader.literal(" "),
              let month = reader.name(in: monthNames), reader.literal(" "),
              let year = reader.digits(4), reader.literal(" "),
              let time = reader.timeOfDay(), reader.literal(" GMT"), reader.isAtEnd else { return nil }
        return makeDate(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func rfc850Date(_ bytes: ArraySlice<UInt8>, now: Date) -> Date? {
        var reader = Reader(bytes)
        guard reader.name(in: longDayNames) != nil, reader.literal(", "),
              let day = reader.digits(2), reader.literal("-"),
              let month = reader.name(in: monthNames), reader.literal("-"),
              let twoDigitYear = reader.digits(2), reader.literal(" "),
              let time = reader.timeOfDay(), reader.literal(" GMT"), reader.isAtEnd else { return nil }
        let currentYear = civilDate(daysSinceEpoch: floorDivide(wholeSeconds(now), 86_400)).year
        var year = currentYear - currentYear % 100 + twoDigitYear
        if year > currentYear + 50 { year -= 100 }
        return makeDate(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (a one-digit day is preceded by a space)
    private static func asctimeDate(_ bytes: ArraySlice<UInt8>) -> Date? {
        var reader = Reader(bytes)
        guard reader.name(in: dayNames) != nil, reader.literal(" "),
              let month = reader.name(in: monthNames), reader.literal(" ") else { return nil }
        let day: Int
        if reader.literal(" "), let digit = reader.digits(1) {
            day = digit
        } else if let digits = reader.digits(2) {
            day = digits
        } else {
            return nil
        }
        guard reader.literal(" "), let time = reader.timeOfDay(), reader.literal(" "),
              let year = reader.digits(4), reader.isAtEnd else { return nil }
        return makeDate(year: year, month: month + 1, day: day, time: time)
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, UTC)

    private static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The date, or nil when a field is out of range. Years run 1 to 9999 (four digits), so
    /// nothing below can overflow.
    private static func makeDate(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard (1...9_999).contains(year), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              (0...23).contains(time.hour), (0...59).contains(time.minute), (0...60).contains(time.second) else { return nil }
        // Days from 1 January 1970 to 1 January `year`: 365 a year plus the leap days between.
        func leapDays(before year: Int) -> Int { (year - 1) / 4 - (year - 1) / 100 + (year - 1) / 400 }
        var days = (year - 1_970) * 365 + leapDays(before: year) - leapDays(before: 1_970)
        for earlier in 1..<month { days += daysIn(month: earlier, year: year) }
        days += day - 1
        // Second 60 is a leap second (the grammar allows it); it reads as the next second.
        let seconds = days * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Year, month (1 to 12) and day of the month for a day counted from 1 January 1970.
    private static func civilDate(daysSinceEpoch: Int64) -> (year: Int, month: Int, day: Int) {
        // Count in 400-year cycles of 146,097 days from 1 March 2000, so that the leap day is
        // the last day of its year and every other month has a fixed length.
        let sinceMarch2000 = daysSinceEpoch - 11_017
        let cycles = floorDivide(sinceMarch2000, 146_097)
        var dayOfCycle = sinceMarch2000 - cycles * 146_097                          // 0 ... 146_096
        var year = 2_000 + cycles * 400
        let centuries = min(dayOfCycle / 36_524, 3)
        dayOfCycle -= centuries * 36_524
        year += centuries * 100
        let quadrennia = dayOfCycle / 1_461
        dayOfCycle -= quadrennia * 1_461
        year += quadrennia * 4
        let years = min(dayOfCycle / 365, 3)
        dayOfCycle -= years * 365
        year += years
        // Months from March: 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31, 29/28.
        let marchBased = [31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31, 29]
        var month = 0
        var dayOfYear = Int(dayOfCycle)
        while month < 11, dayOfYear >= marchBased[month] {
            dayOfYear -= marchBased[month]
            month += 1
        }
        // March (0) ... December (9) are in `year`; January (10) and February (11) in the next.
        let civilMonth = month < 10 ? month + 3 : month - 9
        let civilYear = Int(month < 10 ? year : year + 1)
        return (civilYear, civilMonth, dayOfYear + 1)
    }

    /// Seconds since 1970 of `date`, rounded down and held to years 1 to 9999, the years an
    /// HTTP date can name (so no conversion below can trap, even for `Date.distantFuture`).
    private static func wholeSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return 0 }
        // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
        return Int64(min(max(seconds, -62_135_596_800), 253_402_300_799).rounded(.down))
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    private static func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        value - floorDivide(value, divisor) * divisor
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }

    /// Reads the grammar's pieces from the front of a value, one byte at a time.
    private struct Reader {
        private var bytes: ArraySlice<UInt8>

        init(_ bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { bytes.isEmpty }

        /// Consumes `text` when the value continues with it.
        mutating func literal(_ text: String) -> Bool {
            let expected = text.utf8
            guard bytes.starts(with: expected) else { return false }
            bytes.removeFirst(expected.count)
            return true
        }

        /// Consumes exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count >= count else { return nil }
            var value = 0
            for byte in bytes.prefix(count) {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            bytes.removeFirst(count)
            return value
        }

        /// Consumes one of `names` (case-sensitive) and returns its index.
        mutating func name(in names: [String]) -> Int? {
            for (index, name) in names.enumerated() where literal(name) {
                return index
            }
            return nil
        }

        /// `HH:MM:SS`
        mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2) else { return nil }
            return (hour, minute, second)
        }
    }
}
