/// Finds JSON's special bytes eight at a time, for both readers of the report (the log's record scanner
/// and the HAR cursor): most runs are short, so a call to memchr per run cost more than the scan.
package enum QuoteScan {
    private static let low: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each zero byte of `word` (the lowest one is exact: the classic "has zero byte" test).
    @inline(__always)
    private static func zeros(_ word: UInt64) -> UInt64 { (word &- low) & ~word & high }

    /// The offset of the first `"`, `{`, `}`, `[` or `]` in `base[from..<end]`; `end` if none. (`[` and
    /// `]` are `{` and `}` without bit 0x20, and no other byte becomes either with it.)
    @inline(__always)
    package static func nextStructural(_ base: UnsafePointer<UInt8>, from: Int, end: Int) -> Int {
        var offset = from
        while offset + 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
            let folded = word | 0x2020_2020_2020_2020
            let found = zeros(word ^ 0x2222_2222_2222_2222) | zeros(folded ^ 0x7B7B_7B7B_7B7B_7B7B)
                | zeros(folded ^ 0x7D7D_7D7D_7D7D_7D7D)
            if found != 0 { return offset + found.trailingZeroBitCount / 8 }
            offset += 8
        }
        while offset < end {
            switch base[offset] {
            case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "["), UInt8(ascii: "]"): return offset
            default: offset += 1
            }
        }
        return end
    }

    /// The offset of the first `"` or `\\` in `base[from..<end]`, eight bytes at a time; `end` if none.
    @inline(__always)
    package static func next(_ base: UnsafePointer<UInt8>, from: Int, end: Int) -> Int {
        var offset = from
        while offset + 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
            let found = zeros(word ^ 0x2222_2222_2222_2222) | zeros(word ^ 0x5C5C_5C5C_5C5C_5C5C)
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
