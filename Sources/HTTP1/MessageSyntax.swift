/// What requests and responses share about the syntax of a head (RFC 9112 sections 2.2, 5 and 6;
/// RFC 9110 sections 5.1, 5.5 and 8.6), read strictly and once: a proxy that reads a message more
/// loosely than the next hop is how requests get smuggled and responses split. The bytes of names
/// and values are checked by table, as swift-nio's HTTPHeaderValidator does.
package enum MessageSyntax {
    /// A head that breaks the syntax, and whether it broke a size limit (431 for a request).
    package struct Violation: Error, Equatable {
        package var problem: String
        package var tooLarge = false
    }

    /// tchar (RFC 9110 section 5.6.2).
    private static let tokenTable: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(UInt8(byte))
        }
    }

    @inline(__always)
    package static func isTokenByte(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

    /// field-vchar, SP or HTAB (obs-text included; CR, LF, NUL, DEL and the other controls are not).
    @inline(__always)
    package static func isFieldValueByte(_ byte: UInt8) -> Bool { byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }

    /// Where the head at the start of `bytes` ends (just past its blank line) and how many lines it
    /// has before that blank line; nil while it is incomplete. Every line must end with CRLF. Each
    /// byte is read once, in order, and the head is refused at the first bare LF, bare CR or NUL,
    /// even before its end has arrived: RFC 9112 section 2.2 lets a recipient take a bare LF for a
    /// line end, and this proxy refuses it instead (a head the next hop could split differently is
    /// how requests get smuggled), so a client ending its lines with LF has already sent a whole,
    /// refused head; waiting for a CRLFCRLF it will never send only kept it until the head timeout.
    /// Only a CR that is the last byte so far is undecided. Looks at most `maximumLength` + 4 bytes.
    package static func headBounds(_ bytes: UnsafeRawBufferPointer,
                                   maximumLength: Int) throws(Violation) -> (end: Int, lines: Int)? {
        let limit = min(bytes.count, maximumLength + 4)
        var lines = 0
        var lineStart = 0
        var index = 0
        while index < limit {
            switch bytes[index] {
            case 0x0D:
                guard index + 1 < bytes.count else { return nil }
                guard bytes[index + 1] == 0x0A else { throw Violation(problem: "bare CR in the head") }
                if index == lineStart { return (index + 2, lines) }
                lines += 1
                index += 2
                lineStart = index
            case 0x0A:
                throw Violation(problem: "bare LF in the head")
            case 0:
                throw Violation(problem: "NUL byte in the head")
            default:
                index += 1
            }
        }
        return nil
    }

    /// The field lines of a head from `start` (just after the start line's CRLF) to `end` (the
    /// offset of the blank line), each checked: no obs-fold, a token name directly followed by its
    /// colon, a value of field-value bytes only.
    package static func fieldLines(_ head: UnsafeRawBufferPointer, from start: Int, to end: Int,
                           expected: Int) throws(Violation) -> [HeaderField] {
        var fields: [HeaderField] = []
        fields.reserveCapacity(expected)
        var lineStart = start
        while lineStart < end {
            var lineEnd = lineStart
            while head[lineEnd] != 0x0D { lineEnd += 1 }
            fields.append(try fieldLine(head, line: lineStart..<lineEnd))
            lineStart = lineEnd + 2
        }
        return fields
    }

    private static func fieldLine(_ head: UnsafeRawBufferPointer, line: Range<Int>) throws(Violation) -> HeaderField {
        guard !line.isEmpty else { throw Violation(problem: "empty header line") }
        let first = head[line.lowerBound]
        if first == 0x20 || first == 0x09 {
            throw Violation(problem: "obsolete line folding in a header field")
        }
        var colon = line.lowerBound
        while colon < line.upperBound, isTokenByte(head[colon]) { colon += 1 }
        guard colon < line.upperBound, head[colon] == UInt8(ascii: ":") else {
            // Includes white space between the name and the colon (RFC 9112 section 5.1).
            let found = head[line].contains(UInt8(ascii: ":"))
            throw Violation(problem: found ? "malformed header name" : "header line without a colon")
        }
        guard colon > line.lowerBound else { throw Violation(problem: "empty header name") }
        let field = HeaderField(head, line: line, colon: colon)
        for index in field.value where !isFieldValueByte(head[index]) {
            throw Violation(problem: "control character in a header value")
        }
        return field
    }

    /// How a head frames its body, before the request or response rules are applied.
    package struct Framing: Equatable {
        /// The value every Content-Length element agrees on.
        package var contentLength: Int?
        /// Transfer-Encoding fields, even empty ones: a message with one is not framed by Content-Length.
        package var transferEncodingFields = 0
        /// Transfer codings listed, in all Transfer-Encoding fields together.
        package var codings = 0
        package var chunkedCount = 0
        package var lastIsChunked = false
        /// The first coding that is none of the registered ones a proxy can pass on (RFC 9112 7).
        package var unknownCoding: String?

        package var hasTransferEncoding: Bool { transferEncodingFields > 0 }
        /// Transfer-Encoding ends in exactly one `chunked`, as a message must to be framed by it.
        package var isChunked: Bool { lastIsChunked && chunkedCount == 1 }
    }

    private static let chunkedCoding = Array("chunked".utf8)
    /// The transfer codings of the HTTP Transfer Coding Registry besides chunked (RFC 9112 section 7).
    private static let knownCodings = ["gzip", "x-gzip", "deflate", "compress", "x-compress"]
        .map { Array($0.utf8) }
    /// 18 decimal digits always fit an Int; more is refused rather than risk an overflow.
    package static let maximumLengthDigits = 18

    /// Content-Length and Transfer-Encoding read together (RFC 9112 section 6). Content-Length may be
    /// repeated or listed only with one value (RFC 9110 section 8.6); anything else is refused here.
    package static func framing(_ head: UnsafeRawBufferPointer, _ fields: [HeaderField]) throws(Violation) -> Framing {
        var framing = Framing()
        // Every comma-separated element of every Content-Length field, empty ones included: each must
        // be a decimal number, and all must agree (by value: leading zeros make equal numbers unequal bytes).
        var invalidLength = false
        var conflicting = false
        for field in fields {
            switch field.kind {
            case .contentLength:
                HeaderFields.forEachToken(head, in: field.value, keepingEmpty: true) { element in
                    guard !element.isEmpty, element.count <= maximumLengthDigits,
                          head[element].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                        invalidLength = true
                        return
                    }
                    let value = head[element].reduce(0) { $0 * 10 + Int($1 - 0x30) }
                    if let known = framing.contentLength, known != value { conflicting = true }
                    framing.contentLength = value
                }
            case .transferEncoding:
                framing.transferEncodingFields += 1
                HeaderFields.forEachToken(head, in: field.value) { coding in
                    framing.codings += 1
                    let name = UnsafeRawBufferPointer(rebasing: head[coding])
                    framing.lastIsChunked = HeaderFields.equalsIgnoringCase(name, lowercase: chunkedCoding)
                    if framing.lastIsChunked {
                        framing.chunkedCount += 1
                    } else if framing.unknownCoding == nil,
                              !knownCodings.contains(where: { HeaderFields.equalsIgnoringCase(name, lowercase: $0) }) {
                        framing.unknownCoding = String(decoding: name, as: UTF8.self)
                    }
                }
            default:
                break
            }
        }
        if invalidLength { throw Violation(problem: "invalid Content-Length") }
        if conflicting { throw Violation(problem: "conflicting Content-Length values") }
        return framing
    }
}
