/// Finds where a JSON string's plain run ends, for both readers of the report (the log's record scanner
/// and the HAR cursor): most values are short, so a call to memchr per string cost more than the scan.
enum QuoteScan {
    /// The offset of the first `"` or `\\` in `base[from..<end]`, eight bytes at a time; `end` if none.
    @inline(__always)
    static func next(_ base: UnsafePointer<UInt8>, from: Int, end: Int) -> Int {
        let quotes: UInt64 = 0x2222_2222_2222_2222, backslashes: UInt64 = 0x5C5C_5C5C_5C5C_5C5C
        let low: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        var offset = from
        while offset + 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
            let q = word ^ quotes, b = word ^ backslashes
            // A zero byte in q or b marks a match (the classic "has zero byte" test).
            let found = ((q &- low) & ~q | (b &- low) & ~b) & high
            if found != 0 { return offset + found.trailingZeroBitCount / 8 }
            offset += 8
        }
        while offset < end {
            let byte = base[offset]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return offset }
            offset += 1
        }
        return end
    }
}
