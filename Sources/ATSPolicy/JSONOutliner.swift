/// Reads a JSON document's structure (RFC 8259, strictly: Foundation's JSONDecoder accepts a trailing comma, which
/// no other JSON reader does, so a policy that loads here would break elsewhere), keeping where each key and
/// value is written, and throws at the byte where the document breaks, saying what was expected there.
/// Iterative, so nesting depth cannot exhaust the stack.
struct JSONOutliner {
    private let bytes: [UInt8]
    private var index = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// An object or array not yet closed.
    private struct OpenContainer {
        var isObject: Bool
        var start: Int
        /// Members or elements read so far.
        var count = 0
    }

    mutating func read(into builder: inout PlistOutline.Builder) throws(PlistSyntaxError) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        var open: [OpenContainer] = []
        try readValue(into: &builder, open: &open)
        while var container = open.last {
            skipWhitespace()
            guard index < bytes.count else {
                throw PlistSyntaxError(offset: index, problem: "the file ends inside the \(container.isObject ? "object" : "array")"
                    + " opened at line \(lineNumber(at: container.start)); expected '\(container.isObject ? "}" : "]")'")
            }
            let closer = container.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            if bytes[index] == closer {
                index += 1
                open.removeLast()
                builder.close(at: index)
                continue
            }
            if container.count > 0 {
                guard bytes[index] == UInt8(ascii: ",") else {
                    throw PlistSyntaxError(offset: index, problem: "expected ',' or '\(Character(Unicode.Scalar(closer)))'"
                        + " after a \(container.isObject ? "member" : "value"), found \(found(at: index))")
                }
                let comma = index
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == closer {
                    throw PlistSyntaxError(offset: comma, problem: "a trailing comma before"
                        + " '\(Character(Unicode.Scalar(closer)))' is not JSON (RFC 8259); remove it")
                }
            }
            if container.isObject {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw PlistSyntaxError(offset: index, problem: "expected a key in double quotes, found \(found(at: index))")
                }
                let keyStart = index
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw PlistSyntaxError(offset: index, problem: "expected ':' after the key, found \(found(at: index))")
                }
                index += 1
                builder.key(key, at: keyStart)
            }
            container.count += 1
            open[open.count - 1] = container
            try readValue(into: &builder, open: &open)
        }
        skipWhitespace()
        guard index == bytes.count else {
            throw PlistSyntaxError(offset: index, problem: "expected the end of the file after the document, found"
                + " \(found(at: index))")
        }
    }

    /// One value; an object or array is pushed onto `open` and read by the caller's loop.
    private mutating func readValue(into builder: inout PlistOutline.Builder,
                                    open: inout [OpenContainer]) throws(PlistSyntaxError) {
        skipWhitespace()
        guard index < bytes.count else {
            throw PlistSyntaxError(offset: index, problem: "expected a value, found the end of the file")
        }
        let start = index
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = bytes[index] == UInt8(ascii: "{")
            builder.begin(isObject ? .dictionary : .array, at: start)
            index += 1
            open.append(OpenContainer(isObject: isObject, start: start))
        case UInt8(ascii: "\""):
            builder.begin(.scalar, at: start)
            _ = try string()
            builder.end(at: index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            builder.begin(.scalar, at: start)
            try number()
            builder.end(at: index)
        default:
            for literal in ["true", "false", "null"] where matches(literal, at: index) {
                builder.begin(.scalar, at: start)
                index += literal.utf8.count
                builder.end(at: index)
                return
            }
            throw PlistSyntaxError(offset: index, problem: "expected a value (an object, array, string, number, true,"
                + " false or null), found \(found(at: index))")
        }
    }

    /// A string; `index` at its opening quote, left past the closing one. Read leniently: JSONDecoder checks a
    /// string's escapes, control characters and UTF-8 only when it decodes that string, which it does not for
    /// a duplicate key's value it passes over; the loader finds them in the value that failed.
    private mutating func string() throws(PlistSyntaxError) -> String {
        let start = index
        index += 1
        var out: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: out, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\"), index + 1 < bytes.count {
                escape(into: &out)
            } else {
                out.append(byte)
                index += 1
            }
        }
        throw PlistSyntaxError(offset: start, problem: "this string never ends; expected '\"'")
    }

    /// One escape sequence; `index` at its backslash. What is not a valid escape is kept as written.
    private mutating func escape(into out: inout [UInt8]) {
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "\\"): UInt8(ascii: "\\"), UInt8(ascii: "/"): UInt8(ascii: "/"),
            UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D,
            UInt8(ascii: "t"): 0x09,
        ]
        if let byte = simple[bytes[index + 1]] {
            out.append(byte)
            index += 2
            return
        }
        guard bytes[index + 1] == UInt8(ascii: "u"), let first = hexUnit(at: index) else {
            out.append(contentsOf: bytes[index...(index + 1)])
            index += 2
            return
        }
        index += 6
        var value = UInt32(first)
        if (0xD800..<0xDC00).contains(first), matches("\\u", at: index), let second = hexUnit(at: index),
           (0xDC00..<0xE000).contains(second) {
            index += 6
            let high: UInt32 = (UInt32(first) - 0xD800) << 10
            value = 0x10000 + high + (UInt32(second) - 0xDC00)
        }
        out.append(contentsOf: Array(String(Unicode.Scalar(value) ?? "\u{FFFD}").utf8))
    }

    /// The four hexadecimal digits of `\uXXXX` at `start`, or nil.
    private func hexUnit(at start: Int) -> UInt16? {
        guard start + 6 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for offset in (start + 2)..<(start + 6) {
            guard let digit = Character(Unicode.Scalar(bytes[offset])).hexDigitValue else { return nil }
            value = value << 4 + UInt16(digit)
        }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(PlistSyntaxError) {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - from
        }
        func fail(_ expected: String) -> PlistSyntaxError {
            PlistSyntaxError(offset: index, problem: "expected \(expected) in the number"
                + " '\(SyntaxQuote.quoted(bytes[start..<index]))', found \(found(at: index))")
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                throw PlistSyntaxError(offset: start, problem: "a number with a leading zero; expected '0', '.' or an"
                    + " exponent after it")
            }
        } else if digits() == 0 {
            throw fail("a digit")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { throw fail("a digit after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            if digits() == 0 { throw fail("a digit in the exponent") }
        }
    }

    // MARK: Bytes

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private func matches(_ text: String, at offset: Int) -> Bool {
        let utf8 = text.utf8
        guard offset + utf8.count <= bytes.count else { return false }
        return bytes[offset..<(offset + utf8.count)].elementsEqual(utf8)
    }

    private func lineNumber(at offset: Int) -> Int {
        1 + bytes[..<min(offset, bytes.count)].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    private func column(at offset: Int) -> Int { TextLines(bytes).position(of: offset).column }

    /// What sits at `offset`, for messages: `'}'`, `text 'tru'`, the end of the file.
    private func found(at offset: Int) -> String {
        guard offset < bytes.count else { return "the end of the file" }
        var end = offset + 1
        let isWord = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte >= 0x80
        }
        if isWord(bytes[offset]) {
            while end < bytes.count, end - offset < 24, isWord(bytes[end]) { end += 1 }
        }
        return "'\(SyntaxQuote.quoted(bytes[offset..<end]))'"
    }
}
