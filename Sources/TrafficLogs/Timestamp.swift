import Glibc

/// The log's RFC 3339 timestamps (`2026-11-22T06:21:01.792Z`) to and from milliseconds since the epoch,
/// by hand: a million records must not each go through a date formatter.
public enum Timestamp {
    /// Milliseconds since the epoch; nil when the text is not `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`.
    public static func milliseconds(_ text: UnsafeRawBufferPointer) -> Int64? {
        let count = text.count
        guard count >= 20 else { return nil }
        func digits(_ at: Int, _ length: Int) -> Int? {
            var value = 0
            for index in at..<(at + length) {
                let digit = Int(text[index]) - 0x30
                guard digit >= 0, digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"), text[10] | 0x20 == UInt8(ascii: "t"),
              text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
              let year = digits(0, 4), let month = digits(5, 2), let day = digits(8, 2),
              let hour = digits(11, 2), let minute = digits(14, 2), let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var index = 19
        var millis = 0
        if index < count, text[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100
            let start = index
            while index < count, text[index] >= 0x30, text[index] <= 0x39 {
                millis += Int(text[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetMinutes = 0
        guard index < count else { return nil }
        switch text[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == count, text[index + 3] == UInt8(ascii: ":"),
                  let hours = digits(index + 1, 2), let minutes = digits(index + 4, 2) else { return nil }
            offsetMinutes = (hours * 60 + minutes) * (text[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }

    /// `2026-11-22T06:21:01.792Z` for milliseconds since the epoch.
    public static func text(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let millis = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// Howard Hinnant's days_from_civil: days since 1970-01-01 in the proleptic Gregorian calendar.
    package static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
