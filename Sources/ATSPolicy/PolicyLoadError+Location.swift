import Foundation

/// Where a policy file Foundation refused breaks. Foundation's own messages are no help there: its XML
/// reader counts lines wrongly ("Close tag on line 1" for a tag on line 131) or names none (a truncated
/// file, a value without its key), and its JSON reader says only "not valid JSON". So the text is read
/// again by PlistOutline, which follows the same grammar and says at which byte and what it expected.
extension PolicyLoadError {
    /// This error with the position of the break and a problem that says what was expected there.
    /// `failure` is Foundation's error, whose coding path leads to a value that did not decode.
    func located(in data: Data, format: PolicyFileFormat, failure: (any Error)?) -> PolicyLoadError {
        let prefix = "not a valid \(format.displayName)"
        if format == .binaryPlist {
            return locatedInBinary(data, prefix: prefix, failure: failure)
        }
        let bytes = [UInt8](data)
        let outline: PlistOutline
        do {
            outline = try PlistOutline(bytes: bytes, format: format)
        } catch {
            let lines = TextLines(bytes)
            return PolicyLoadError(path: path, problem: "\(prefix): \(error.problem)",
                                   position: lines.position(of: error.offset), byteOffset: error.offset)
        }
        // The document's structure holds, so one value did not decode: a number out of range, a date,
        // bytes that are not UTF-8, nesting too deep.
        guard let codingPath = failure.flatMap(Self.codingPath), let node = outline.node(at: codingPath) else {
            return PolicyLoadError(path: path, problem: Self.withoutLineClaims(problem))
        }
        let start = outline.nodes[node].start, end = outline.nodes[node].end
        let keyPath = Self.render(codingPath)
        let at = keyPath.isEmpty ? "" : " at \(keyPath)"
        if let bad = Self.firstInvalidUTF8(bytes, in: start..<end) {
            return PolicyLoadError(path: path, problem: "\(prefix): byte 0x\(String(bytes[bad], radix: 16, uppercase: true))"
                + "\(at) is not UTF-8; expected text in UTF-8", position: outline.position(of: bad), byteOffset: bad)
        }
        if format == .json, bytes[start] == UInt8(ascii: "\""),
           let control = bytes[start..<end].firstIndex(where: { $0 < 0x20 }) {
            let hex = String(bytes[control], radix: 16, uppercase: true)
            return PolicyLoadError(path: path, problem: "\(prefix): a control character (0x\(hex)) in the string\(at);"
                + " expected it written as an escape such as \\n or \\u0004",
                position: outline.position(of: control), byteOffset: control)
        }
        let written = SyntaxQuote.quoted(bytes[start..<min(end, start + 60)], limit: 60)
        let reason = failure.map(Self.reason) ?? "cannot be read"
        return PolicyLoadError(path: path, problem: "\(prefix): the value\(at) (\(written)) \(Self.expectation(written, reason))",
                               position: outline.position(of: start), byteOffset: start)
    }

    /// What a value that did not decode should have been, from how it is written.
    private static func expectation(_ written: String, _ reason: String) -> String {
        if reason.hasPrefix("nested deeper") { return "is \(reason)" }
        let expected: [(prefix: String, text: String)] = [
            ("<integer", "a decimal or 0x integer that fits in 64 bits"), ("<real", "a decimal number"),
            ("<date", "a date written as 2026-01-01T00:00:00Z"), ("<data", "base64 text"),
            ("<dict", "a dictionary (one holding only CF$UID is an archiver reference, not a value)"),
        ]
        if let match = expected.first(where: { written.hasPrefix($0.prefix) }) {
            return "cannot be read; expected \(match.text)"
        }
        if let first = written.first, first == "-" || first.isNumber {
            return "cannot be read; expected a number that fits in 64 bits or a double"
        }
        return "cannot be read (\(reason))"
    }

    private static func codingPath(_ error: any Error) -> [any CodingKey]? {
        switch error as? DecodingError {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context),
             .keyNotFound(_, let context):
            return context.codingPath
        case nil:
            return nil
        @unknown default:
            return nil
        }
    }

    private static func reason(_ error: any Error) -> String {
        guard case DecodingError.dataCorrupted(let context) = error else { return "cannot be read" }
        return context.debugDescription
    }

    /// `NSAppTransportSecurity.NSExceptionDomains.a.com`, `a[0]`.
    private static func render(_ codingPath: [any CodingKey]) -> String {
        var out = ""
        for key in codingPath {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                if !out.isEmpty { out += "." }
                out += SyntaxQuote.quoted(ArraySlice(key.stringValue.utf8), limit: 80)
            }
        }
        return out
    }

    /// Foundation's "on line N" is not to be trusted; without a position of our own, say none.
    private static func withoutLineClaims(_ problem: String) -> String {
        problem.replacingOccurrences(of: #" (on|at) line \d+"#, with: "", options: .regularExpression)
    }

    private static func firstInvalidUTF8(_ bytes: [UInt8], in range: Range<Int>) -> Int? {
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard let length = (1...4).first(where: {
                offset + $0 <= bytes.count && String(validating: bytes[offset..<(offset + $0)], as: UTF8.self) != nil
            }) else { return offset }
            offset += length
        }
        return nil
    }
}

// MARK: Binary property lists

extension PolicyLoadError {
    /// A binary plist has no lines: the byte where its trailer, offset table or an object marker is wrong,
    /// else the key path of the value that did not decode.
    private func locatedInBinary(_ data: Data, prefix: String, failure: (any Error)?) -> PolicyLoadError {
        let bytes = [UInt8](data)
        if let (offset, problem) = BinaryPlistCheck.firstProblem(bytes) {
            return PolicyLoadError(path: path, problem: "\(prefix): \(problem) (at byte \(offset))", byteOffset: offset)
        }
        if let codingPath = failure.flatMap(Self.codingPath), !codingPath.isEmpty {
            let reason = failure.map(Self.reason) ?? "cannot be read"
            let detail = reason == "value of unknown type" ? "cannot be read" : reason
            return PolicyLoadError(path: path, problem: "\(prefix): the value at \(Self.render(codingPath)) \(detail)")
        }
        return self
    }
}

/// The structure of a binary plist ("bplist00"), checked from its trailer: enough to name the byte where
/// it breaks. Foundation's reader decides whether it loads; this only says where it does not.
enum BinaryPlistCheck {
    static func firstProblem(_ bytes: [UInt8]) -> (offset: Int, problem: String)? {
        let headerLength = 8, trailerLength = 32
        guard bytes.count >= headerLength + trailerLength + 1 else {
            return (bytes.count, "the file ends after \(bytes.count) bytes; expected at least a header, one object and"
                + " the 32-byte trailer")
        }
        let trailer = bytes.count - trailerLength
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        let objectCount = integer(bytes, at: trailer + 8, size: 8)
        let topObject = integer(bytes, at: trailer + 16, size: 8)
        let tableOffset = integer(bytes, at: trailer + 24, size: 8)
        guard (1...8).contains(offsetSize) else {
            return (trailer + 6, "the trailer's offset size is \(offsetSize); expected 1 to 8")
        }
        guard (1...8).contains(referenceSize) else {
            return (trailer + 7, "the trailer's object reference size is \(referenceSize); expected 1 to 8")
        }
        guard objectCount > 0, objectCount < UInt64(bytes.count) else {
            return (trailer + 8, "the trailer counts \(objectCount) objects; expected 1 to fewer than the file's bytes")
        }
        guard topObject < objectCount else {
            return (trailer + 16, "the trailer's top object is \(topObject), but there are \(objectCount) objects")
        }
        let tableEnd = tableOffset.addingReportingOverflow(objectCount.multipliedReportingOverflow(by: UInt64(offsetSize)).partialValue)
        guard tableOffset >= UInt64(headerLength), !tableEnd.overflow, tableEnd.partialValue <= UInt64(trailer) else {
            return (trailer + 24, "the offset table at byte \(tableOffset) with \(objectCount) entries does not fit between"
                + " the header and the trailer")
        }
        for object in 0..<Int(objectCount) {
            let entry = Int(tableOffset) + object * offsetSize
            let offset = integer(bytes, at: entry, size: offsetSize)
            guard offset >= UInt64(headerLength), offset < tableOffset else {
                return (entry, "object \(object)'s offset is \(offset); expected one inside the object table"
                    + " (bytes 8 to \(tableOffset))")
            }
            let marker = bytes[Int(offset)]
            guard isKnownMarker(marker) else {
                return (Int(offset), "object \(object) starts with 0x\(String(marker, radix: 16, uppercase: true)), which is"
                    + " no type a property list has")
            }
        }
        return nil
    }

    /// The type markers of format 00: null, booleans, fill, integers, reals, date, data, strings, UID,
    /// array, set, dictionary.
    private static func isKnownMarker(_ marker: UInt8) -> Bool {
        switch marker >> 4 {
        case 0x0: [0x00, 0x08, 0x09, 0x0F].contains(marker)
        case 0x1: marker & 0x0F <= 4
        case 0x2: marker & 0x0F == 2 || marker & 0x0F == 3
        case 0x3: marker == 0x33
        case 0x4, 0x5, 0x6, 0x8, 0xA, 0xC, 0xD: true
        default: false
        }
    }

    private static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + size) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }
}
