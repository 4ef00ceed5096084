/// A cursor over a JSON document read from a `ByteSource` one buffer at a time: the byte-level half of
/// the HAR parser. It reads keys and the values it is asked for into the caller's buffers (bounded),
/// skips every other value (strings eight bytes at a time, containers with their brackets checked for
/// balance), and its errors carry the byte offset in the stream.
package struct HARCursor {
    private let source: ByteSource
    private let buffer: UnsafeMutableRawBufferPointer
    private let bytes: UnsafePointer<UInt8>
    private var position = 0
    private var end = 0
    /// The stream offset of `bytes[0]`.
    private var base = 0
    /// A key `member` had to copy (it spanned two reads, or had escapes).
    private var keyBuffer: [UInt8] = []
    /// The closing brackets a skipped value still owes, innermost last (`depthLimit` of them at most).
    private let skipStack: UnsafeMutablePointer<UInt8>

    /// Nesting deeper than this in a skipped value is refused rather than tracked without bound.
    package static let depthLimit = 10_000

    package init(source: ByteSource, bufferSize: Int) {
        self.source = source
        buffer = .allocate(byteCount: bufferSize, alignment: 16)
        bytes = UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
        base = source.offset
        skipStack = .allocate(capacity: HARCursor.depthLimit)
    }

    /// Frees the buffers (the cursor is a value; its owner ends it once).
    package func close() {
        buffer.deallocate()
        skipStack.deallocate()
    }

    /// The stream offset of the next byte.
    package var offset: Int { base + position }

    /// Takes the byte `peek` returned.
    package mutating func advance() { position += 1 }

    // MARK: structure

    /// Moves to the next member of an object and leaves the cursor at its value: the index in `names`
    /// of its key, -1 for a key not among them, nil at the object's closing brace. A key is compared in
    /// the read buffer where it lies whole there, and copied only when it spans two reads or has escapes.
    package mutating func member(_ first: inout Bool, _ names: [StaticString],
                         in context: @autoclosure () -> String) throws(LogReadError) -> Int? {
        skipWhitespace()
        guard let next = try peek() else { throw truncated(context()) }
        if next == UInt8(ascii: "}") { position += 1; return nil }
        if !first {
            guard next == UInt8(ascii: ",") else { throw syntax("expected , or } in \(context())") }
            position += 1
            skipWhitespace()
        }
        first = false
        guard try peek() == UInt8(ascii: "\"") else { throw syntax("expected a key in \(context())") }
        let close = QuoteScan.next(bytes, from: position + 1, end: end)
        var found = -1
        if close < end, bytes[close] == UInt8(ascii: "\"") {
            found = HARCursor.match(UnsafeRawBufferPointer(start: bytes + position + 1, count: close - position - 1), names)
            position = close + 1
        } else {
            var key = keyBuffer
            keyBuffer = []
            defer { keyBuffer = key }
            try readString(into: &key, limit: 64)
            found = key.withUnsafeBytes { HARCursor.match($0, names) }
        }
        skipWhitespace()
        guard try peek() == UInt8(ascii: ":") else { throw syntax("expected : after a key in \(context())") }
        position += 1
        skipWhitespace()
        return found
    }

    private static func match(_ key: UnsafeRawBufferPointer, _ names: [StaticString]) -> Int {
        for (index, name) in names.enumerated() where name.utf8CodeUnitCount == key.count {
            if key.count == 0 { return index }
            // The first byte decides most comparisons without a call.
            if key[0] == name.utf8Start[0], memcmp(key.baseAddress!, name.utf8Start, key.count) == 0 { return index }
        }
        return -1
    }

    package mutating func expect(_ byte: UInt8, _ what: String) throws(LogReadError) {
        skipWhitespace()
        guard let next = try peek() else { throw truncated(what) }
        guard next == byte else { throw syntax("expected \(what)") }
        position += 1
    }

    /// The next byte without taking it; nil at the end of the input.
    @inline(__always)
    package mutating func peek() throws(LogReadError) -> UInt8? {
        if position == end, !(try refill()) { return nil }
        return bytes[position]
    }

    package mutating func refill() throws(LogReadError) -> Bool {
        base += end
        position = 0
        end = try source.read(into: buffer)
        return end > 0
    }

    /// Skips spaces, tabs and newlines, across buffers (errors surface at the next peek).
    @inline(__always)
    package mutating func skipWhitespace() {
        if position < end, bytes[position] > 0x20 { return }
        skipWhitespaceAcrossReads()
    }

    private mutating func skipWhitespaceAcrossReads() {
        while true {
            while position < end {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
            guard (try? refill()) == true else { return }
        }
    }

    // MARK: values

    /// A string value into `out` (escapes decoded, at most `limit` bytes kept); false for null or a
    /// value of another type (skipped), which the entry then lacks.
    @discardableResult
    package mutating func readString(into out: inout [UInt8], limit: Int) throws(LogReadError) -> Bool {
        out.removeAll(keepingCapacity: true)
        guard try peek() == UInt8(ascii: "\"") else {
            try skipValue()
            return false
        }
        position += 1
        var escaped = false
        while true {
            if position == end, !(try refill()) { throw truncated("a string") }
            let stop = QuoteScan.next(bytes, from: position, end: end)
            if out.count < limit {
                let take = min(stop - position, limit - out.count)
                out.append(contentsOf: UnsafeBufferPointer(start: bytes + position, count: take))
            }
            position = stop
            guard position < end else { continue }
            if bytes[position] == UInt8(ascii: "\"") {
                position += 1
                break
            }
            // A backslash and the byte it escapes, kept as they are and decoded at the end.
            escaped = true
            position += 1
            if position == end, !(try refill()) { throw truncated("a string") }
            if out.count + 1 < limit { out.append(UInt8(ascii: "\\")); out.append(bytes[position]) }
            position += 1
        }
        if escaped {
            let decoded = out.withUnsafeBytes { RecordScanner.unescape($0) }
            out.removeAll(keepingCapacity: true)
            out.append(contentsOf: decoded.utf8)
        }
        return true
    }

    package mutating func skipString() throws(LogReadError) {
        position += 1
        while true {
            if position == end, !(try refill()) { throw truncated("a string") }
            position = QuoteScan.next(bytes, from: position, end: end)
            guard position < end else { continue }
            if bytes[position] == UInt8(ascii: "\"") {
                position += 1
                return
            }
            position += 1
            if position == end, !(try refill()) { throw truncated("a string") }
            position += 1
        }
    }

    /// A number that is a whole number (`200`, `-1`); nil for other values, which are skipped.
    package mutating func readInteger() throws(LogReadError) -> Int? {
        guard let first = try peek(), first == UInt8(ascii: "-") || (0x30...0x39).contains(first) else {
            try skipValue()
            return nil
        }
        var value = 0
        var negative = false
        var integral = true
        var digits = 0
        while true {
            if position == end, !(try refill()) { break }
            let byte = bytes[position]
            switch byte {
            case 0x30...0x39:
                if digits < 18 { value = value * 10 + Int(byte - 0x30) }
                digits += 1
            case UInt8(ascii: "-") where digits == 0 && !negative: negative = true
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-"): integral = false
            default:
                return integral && digits > 0 ? (negative ? -value : value) : nil
            }
            position += 1
        }
        return integral && digits > 0 ? (negative ? -value : value) : nil
    }

    /// Skips any value: strings, numbers and literals, and objects and arrays with their brackets
    /// checked for balance (their commas and colons are not: nothing in them is read).
    package mutating func skipValue() throws(LogReadError) {
        guard let first = try peek() else { throw truncated("a value") }
        switch first {
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while true {
                if position == end, !(try refill()) { throw truncated("a nested value") }
                // Numbers, literals, colons, commas and spaces are not looked at: only strings and brackets.
                position = QuoteScan.nextStructural(bytes, from: position, end: end)
                if position == end { continue }
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    // The string's end in this buffer, without a call; across buffers or escapes, skipString.
                    let stop = QuoteScan.next(bytes, from: position + 1, end: end)
                    if stop < end, bytes[stop] == UInt8(ascii: "\"") {
                        position = stop + 1
                    } else {
                        try skipString()
                    }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard depth < HARCursor.depthLimit else { throw syntax("nested deeper than \(HARCursor.depthLimit) levels") }
                    // `{` + 2 is `}`, `[` + 2 is `]`.
                    skipStack[depth] = byte + 2
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard skipStack[depth - 1] == byte else { throw syntax("unbalanced \(Character(UnicodeScalar(byte)))") }
                    depth -= 1
                    if depth == 0 { position += 1; return }
                default:
                    break
                }
                position += 1
            }
        case UInt8(ascii: "-"), 0x30...0x39, UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            while true {
                if position == end, !(try refill()) { return }
                switch bytes[position] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: return
                case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ":"):
                    throw syntax("expected a value")
                default: position += 1
                }
            }
        default:
            throw syntax("expected a value")
        }
    }

    // MARK: errors

    package var location: String {
        let at = base + position
        return "byte \(at)" + (source.isCompressed ? " of the decompressed stream" : "")
    }

    package func syntax(_ what: String) -> LogReadError {
        LogReadError(path: source.path, problem: "not valid HAR JSON at \(location): \(what)")
    }

    package func truncated(_ inside: String) -> LogReadError {
        LogReadError(path: source.path, problem: "truncated HAR at \(location): the file ends inside \(inside)")
    }

    package func problem(_ text: String) -> LogReadError {
        LogReadError(path: source.path, problem: text)
    }
}

import Glibc
