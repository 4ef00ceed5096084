/// Reads a HAR 1.2 file (`log.entries`, as browsers' DevTools, Playwright, mitmproxy, Charles and
/// Proxyman write it) as a stream: one buffer of input is held at a time, never the document or one
/// entry, so a capture of a gigabyte with embedded response bodies costs what a small one does.
///
/// It walks the document's structure and keeps only the values the report needs (the entry's time,
/// URL, method, status, error and TLS details), each copied into a reused buffer of bounded size;
/// everything else is skipped, strings eight bytes at a time. Structure is checked as it goes
/// (balanced brackets, keys, colons and commas where values are read), and a file that is not JSON or
/// ends early is refused with the byte offset where it went wrong.
struct HARParser {
    private let source: ByteSource
    private let buffer: UnsafeMutableRawBufferPointer
    private var bytes: UnsafeMutablePointer<UInt8>
    private var position = 0
    private var end = 0
    /// The stream offset of `bytes[0]`.
    private var base = 0
    private var keyBuffer: [UInt8] = []
    private var skipStack: [UInt8] = []
    private var entry = HAREntry()
    /// `log.creator`: the tool that wrote the capture (`mitmproxy 11.0.2`).
    private(set) var creator: String?
    private var creatorName: [UInt8] = []
    private var creatorVersion: [UInt8] = []

    /// The longest URL kept (the scheme, host and port are at its start; `data:` URLs run to megabytes).
    static let urlLimit = 8192
    /// The longest other value kept.
    static let valueLimit = 256
    /// Nesting deeper than this in a skipped value is refused rather than tracked without bound.
    static let depthLimit = 10_000

    init(source: ByteSource, bufferSize: Int = LogReader.chunkSize) {
        self.source = source
        buffer = .allocate(byteCount: bufferSize, alignment: 16)
        bytes = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    }

    /// Frees the read buffer (the parser is a value; its owner ends it once).
    func close() { buffer.deallocate() }

    /// Parses the whole document, handing each entry to `visit` (entries are numbered from 1).
    mutating func parse(_ visit: (HAREntry) -> Void) throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "the HAR document (a JSON object)")
        var first = true
        var sawLog = false, sawEntries = false
        while try member(&first, in: "the HAR document") {
            if key("log") {
                sawLog = true
                guard try peek("log") == UInt8(ascii: "{") else { throw syntax("log is not an object") }
                sawEntries = try parseLog(visit) || sawEntries
            } else {
                try skipValue()
            }
        }
        skipWhitespace()
        if try peek("the end of the document") != nil { throw syntax("unexpected data after the HAR document") }
        guard sawLog else { throw problem("not a HAR file: the JSON document has no \"log\"") }
        guard sawEntries else { throw problem("not a HAR file: \"log\" has no \"entries\" array") }
    }

    /// `log`: its `entries` and `creator`. True when it had an entries array.
    private mutating func parseLog(_ visit: (HAREntry) -> Void) throws(LogReadError) -> Bool {
        try expect(UInt8(ascii: "{"), "log")
        var first = true
        var sawEntries = false
        while try member(&first, in: "log") {
            if key("entries") {
                guard try peek("log.entries") == UInt8(ascii: "[") else { throw syntax("log.entries is not an array") }
                try parseEntries(visit)
                sawEntries = true
            } else if key("creator"), try peek("log.creator") == UInt8(ascii: "{") {
                try parseCreator()
            } else {
                try skipValue()
            }
        }
        return sawEntries
    }

    private mutating func parseCreator() throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "log.creator")
        var first = true
        while try member(&first, in: "log.creator") {
            if key("name") { try read(\.creatorName, limit: HARParser.valueLimit) }
            else if key("version") { try read(\.creatorVersion, limit: HARParser.valueLimit) }
            else { try skipValue() }
        }
        let name = String(decoding: creatorName, as: UTF8.self)
        creator = creatorVersion.isEmpty ? name : name + " " + String(decoding: creatorVersion, as: UTF8.self)
    }

    private mutating func parseEntries(_ visit: (HAREntry) -> Void) throws(LogReadError) {
        try expect(UInt8(ascii: "["), "log.entries")
        var index = 0
        while true {
            skipWhitespace()
            guard let next = try peek("log.entries") else { throw truncated("log.entries") }
            if next == UInt8(ascii: "]") { position += 1; return }
            if index > 0 {
                guard next == UInt8(ascii: ",") else { throw syntax("expected , or ] between entries") }
                position += 1
                skipWhitespace()
            }
            index += 1
            entry.reset(index: index, offset: base + position)
            if try peek("log.entries") == UInt8(ascii: "{") {
                try parseEntry()
            } else {
                try skipValue()
                entry.notAnObject = true
            }
            visit(entry)
        }
    }

    private mutating func parseEntry() throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "an entry")
        var first = true
        while try member(&first, in: "entry \(entry.index)") {
            if key("startedDateTime") {
                entry.hasStarted = try read(\.entry.started, limit: HARParser.valueLimit)
            } else if key("request"), try peek("request") == UInt8(ascii: "{") {
                try parseRequest()
            } else if key("response"), try peek("response") == UInt8(ascii: "{") {
                try parseResponse()
            } else if key("_securityDetails"), try peek("_securityDetails") == UInt8(ascii: "{") {
                try parseSecurityDetails()
            } else {
                try skipValue()
            }
        }
    }

    private mutating func parseRequest() throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "request")
        var first = true
        while try member(&first, in: "request") {
            if key("url") { entry.hasURL = try read(\.entry.url, limit: HARParser.urlLimit) }
            else if key("method") { try read(\.entry.method, limit: HARParser.valueLimit) }
            else { try skipValue() }
        }
    }

    private mutating func parseResponse() throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "response")
        var first = true
        while try member(&first, in: "response") {
            if key("status") { entry.status = try readInteger() }
            else if key("_error") { try read(\.entry.error, limit: HARParser.valueLimit) }
            else { try skipValue() }
        }
    }

    /// Chrome's and Playwright's `_securityDetails`: the protocol always; Chrome's DevTools protocol
    /// also gives the cipher, key exchange, MAC and key exchange group.
    private mutating func parseSecurityDetails() throws(LogReadError) {
        try expect(UInt8(ascii: "{"), "_securityDetails")
        var first = true
        while try member(&first, in: "_securityDetails") {
            if key("protocol") { try read(\.entry.tlsProtocol, limit: HARParser.valueLimit) }
            else if key("cipher") { try read(\.entry.cipher, limit: HARParser.valueLimit) }
            else if key("keyExchange") { try read(\.entry.keyExchange, limit: HARParser.valueLimit) }
            else if key("keyExchangeGroup") { try read(\.entry.keyExchangeGroup, limit: HARParser.valueLimit) }
            else if key("mac") { try read(\.entry.mac, limit: HARParser.valueLimit) }
            else { try skipValue() }
        }
    }

    // MARK: structure

    /// Moves to the next member of an object: false at its closing brace; otherwise the key is in
    /// `keyBuffer` and the cursor at its value.
    private mutating func member(_ first: inout Bool, in context: String) throws(LogReadError) -> Bool {
        skipWhitespace()
        guard let next = try peek(context) else { throw truncated(context) }
        if next == UInt8(ascii: "}") { position += 1; return false }
        if !first {
            guard next == UInt8(ascii: ",") else { throw syntax("expected , or } in \(context)") }
            position += 1
            skipWhitespace()
        }
        first = false
        guard try peek(context) == UInt8(ascii: "\"") else { throw syntax("expected a key in \(context)") }
        try read(\.keyBuffer, limit: 64)
        skipWhitespace()
        guard try peek(context) == UInt8(ascii: ":") else { throw syntax("expected : after a key in \(context)") }
        position += 1
        skipWhitespace()
        return true
    }

    private func key(_ name: StaticString) -> Bool {
        keyBuffer.count == name.utf8CodeUnitCount
            && keyBuffer.withUnsafeBytes { memcmp($0.baseAddress!, name.utf8Start, name.utf8CodeUnitCount) == 0 }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(LogReadError) {
        skipWhitespace()
        guard let next = try peek(what) else { throw truncated(what) }
        guard next == byte else { throw syntax("expected \(what)") }
        position += 1
    }

    /// The next byte without taking it; nil at the end of the input.
    private mutating func peek(_ context: String) throws(LogReadError) -> UInt8? {
        if position == end, !(try refill()) { return nil }
        return bytes[position]
    }

    private mutating func refill() throws(LogReadError) -> Bool {
        base += end
        position = 0
        end = try source.read(into: buffer)
        return end > 0
    }

    /// Skips spaces, tabs and newlines, across buffers (errors surface at the next peek).
    private mutating func skipWhitespace() {
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

    /// `readString` into one of the parser's buffers, without copying it (the buffer is moved out and back).
    @discardableResult
    private mutating func read(_ field: WritableKeyPath<HARParser, [UInt8]>, limit: Int) throws(LogReadError) -> Bool {
        var out = self[keyPath: field]
        self[keyPath: field] = []
        defer { self[keyPath: field] = out }
        return try readString(into: &out, limit: limit)
    }

    /// A string value into `out` (escapes decoded, at most `limit` bytes kept); false for null or a
    /// value of another type (skipped), which the entry then lacks.
    @discardableResult
    private mutating func readString(into out: inout [UInt8], limit: Int) throws(LogReadError) -> Bool {
        out.removeAll(keepingCapacity: true)
        guard try peek("a value") == UInt8(ascii: "\"") else {
            try skipValue()
            return false
        }
        position += 1
        var escaped = false
        while true {
            if position == end, !(try refill()) { throw truncated("a string") }
            let stop = nextQuoteOrBackslash()
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

    /// The offset in the buffer of the next `"` or `\\` from the cursor, or `end`; eight bytes at a time.
    private func nextQuoteOrBackslash() -> Int {
        let quotes: UInt64 = 0x2222_2222_2222_2222, backslashes: UInt64 = 0x5C5C_5C5C_5C5C_5C5C
        let low: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        var offset = position
        while offset + 8 <= end {
            let word = UInt64(littleEndian: UnsafeRawPointer(bytes + offset).loadUnaligned(as: UInt64.self))
            let q = word ^ quotes, b = word ^ backslashes
            let found = ((q &- low) & ~q | (b &- low) & ~b) & high
            if found != 0 { return offset + found.trailingZeroBitCount / 8 }
            offset += 8
        }
        while offset < end {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return offset }
            offset += 1
        }
        return end
    }

    private mutating func skipString() throws(LogReadError) {
        position += 1
        while true {
            if position == end, !(try refill()) { throw truncated("a string") }
            position = nextQuoteOrBackslash()
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
    private mutating func readInteger() throws(LogReadError) -> Int? {
        guard let first = try peek("a value"), first == UInt8(ascii: "-") || (0x30...0x39).contains(first) else {
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
    private mutating func skipValue() throws(LogReadError) {
        guard let first = try peek("a value") else { throw truncated("a value") }
        switch first {
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            skipStack.removeAll(keepingCapacity: true)
            while true {
                if position == end, !(try refill()) { throw truncated("a nested value") }
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    try skipString()
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard skipStack.count < HARParser.depthLimit else { throw syntax("nested deeper than \(HARParser.depthLimit) levels") }
                    skipStack.append(byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]"))
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard skipStack.last == byte else { throw syntax("unbalanced \(Character(UnicodeScalar(byte)))") }
                    skipStack.removeLast()
                    if skipStack.isEmpty { position += 1; return }
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

    private var location: String {
        let at = base + position
        return "byte \(at)" + (source.isCompressed ? " of the decompressed stream" : "")
    }

    private func syntax(_ what: String) -> LogReadError {
        LogReadError(path: source.path, problem: "not valid HAR JSON at \(location): \(what)")
    }

    private func truncated(_ inside: String) -> LogReadError {
        LogReadError(path: source.path, problem: "truncated HAR at \(location): the file ends inside \(inside)")
    }

    private func problem(_ text: String) -> LogReadError {
        LogReadError(path: source.path, problem: text)
    }
}

import Glibc
