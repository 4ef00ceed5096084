/// A place in a text file: 1-based line and column, the column counted in Unicode scalars (a tab is one),
/// as editors and SARIF's `unicodeCodePoints` column kind count them.
public struct TextPosition: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `12:5`, as in `Info.plist:12:5`.
    public var description: String { "\(line):\(column)" }
}

/// Where the lines of a text start, to turn byte offsets into positions.
package struct TextLines: Sendable {
    private let bytes: [UInt8]
    /// Offsets where lines start, ascending, for a binary search.
    private let starts: [Int]

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var starts = [0]
        for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") { starts.append(offset + 1) }
        self.starts = starts
    }

    /// The position of the byte at `offset` (the end of the text is a position too).
    package func position(of offset: Int) -> TextPosition {
        let offset = min(max(offset, 0), bytes.count)
        let line = lineIndex(of: offset)
        var column = 1
        var index = starts[line]
        // Continuation bytes (10xxxxxx) belong to the scalar before them.
        while index < offset {
            if bytes[index] & 0xC0 != 0x80 { column += 1 }
            index += 1
        }
        return TextPosition(line: line + 1, column: column)
    }

    /// The 1-based line of the byte at `offset`.
    package func line(of offset: Int) -> Int { lineIndex(of: min(max(offset, 0), bytes.count)) + 1 }

    private func lineIndex(of offset: Int) -> Int {
        var low = 0, high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }
}
