import Glibc

/// Numbers and times as the log spells them, written as bytes.
package enum LogText {
    /// RFC 3339 UTC with milliseconds (`2026-11-22T10:04:00.123Z`).
    package static func appendTimestamp(_ time: Double, to bytes: inout [UInt8]) {
        var seconds = time_t(time.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = UInt(max(0, min(999, Int((time - time.rounded(.down)) * 1000))))
        appendDecimal(UInt(max(0, parts.tm_year + 1900)), width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDecimal(UInt(parts.tm_mon + 1), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDecimal(UInt(parts.tm_mday), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendDecimal(UInt(parts.tm_hour), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDecimal(UInt(parts.tm_min), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDecimal(UInt(parts.tm_sec), width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendDecimal(millis, width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Decimal digits, zero-padded to `width`.
    package static func appendDecimal(_ value: UInt, width: Int = 1, to bytes: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 24 bytes: UInt.max has 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var remaining = value
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0 || buffer.count - index < width
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }
}
