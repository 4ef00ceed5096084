/// Finds where a chunked message body ends (RFC 9112 section 7.1) without decoding it, so the proxy
/// can pass the body through verbatim and know where the next pipelined request starts. It reads as
/// strictly as the head parsers: a chunk line or trailer that one hop reads differently from the next
/// is a way to smuggle a request inside a body.
package struct ChunkedScanner {
    /// Where in a chunk line or body the scanner is. Chunk extensions follow RFC 9112 section 7.1.1
    /// exactly: `*( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )`, white space only
    /// ever before a `;` or `=` (so `5 \r\n` and `5;a \r\n` are refused, as a stricter hop would).
    private enum State {
        /// chunk-size digits so far (the value is in `size`).
        case size(digits: Int)
        /// White space after the size or a value: only more of it or `;` may follow.
        case beforeSemicolon
        /// After `;`: white space, then an extension name.
        case extensionNameStart
        case extensionName
        /// White space after a name: only more of it, `=` or `;` may follow.
        case afterExtensionName
        /// After `=`: white space, then a token or a quoted string.
        case extensionValueStart
        case extensionToken
        case extensionQuoted
        case extensionQuotedPair
        case afterExtensionQuoted
        case sizeLF
        case data(remaining: Int)
        case dataCR
        case dataLF
        /// The start of a trailer line, or of the final empty line.
        case trailerLineStart
        case trailerName
        case trailerValue
        case trailerLF(empty: Bool)
        case done
    }

    private var state = State.size(digits: 0)
    /// The size of the chunk whose line is being read.
    private var size = 0
    /// Bytes of the current chunk line, and of the trailer section, against their limits.
    private var lineLength = 0
    private var trailerLength = 0

    /// A chunk line (size and extensions) longer than this is refused.
    package static let maximumChunkLine = 4096
    /// A trailer section longer than this is refused (the request head's own limit).
    package static let maximumTrailerSection = 16 * 1024

    package var isDone: Bool { if case .done = state { true } else { false } }

    package struct Malformed: Error, Equatable, CustomStringConvertible {
        package var problem: String
        package var description: String { problem }
    }

    /// Consumes bytes of the body; returns how many belong to it (fewer than given once it ends).
    package mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> Int {
        try scan(bytes) { _ in }
    }

    /// The same, handing `data` the ranges of `bytes` that are chunk data, in order: the body
    /// without its chunked coding (chunk lines, extensions and the trailer section left out), for a
    /// recipient that removes the coding (RFC 9112 section 7.1.3).
    package mutating func scan(_ bytes: UnsafeRawBufferPointer, data: (Range<Int>) -> Void) throws(Malformed) -> Int {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch state {
            case .done:
                return index
            case .size(let digits):
                if let digit = Self.hexValue(byte) {
                    guard digits < 15 else { throw Malformed(problem: "chunk size too large") }
                    size = size << 4 | digit
                    state = .size(digits: digits + 1)
                } else {
                    guard digits > 0 else { throw Malformed(problem: "chunk line without a size") }
                    state = try afterSizeOrValue(byte)
                }
            case .beforeSemicolon:
                switch byte {
                case 0x20, 0x09: break
                case UInt8(ascii: ";"): state = .extensionNameStart
                default: throw Malformed(problem: "white space in a chunk line not followed by an extension")
                }
            case .extensionNameStart:
                if byte == 0x20 || byte == 0x09 { break }
                guard MessageSyntax.isTokenByte(byte) else { throw Malformed(problem: "malformed chunk extension name") }
                state = .extensionName
            case .extensionName:
                switch byte {
                case _ where MessageSyntax.isTokenByte(byte): break
                case UInt8(ascii: "="): state = .extensionValueStart
                case UInt8(ascii: ";"): state = .extensionNameStart
                case 0x20, 0x09: state = .afterExtensionName
                case 0x0D: state = .sizeLF
                default: throw Malformed(problem: "malformed chunk extension name")
                }
            case .afterExtensionName:
                switch byte {
                case 0x20, 0x09: break
                case UInt8(ascii: "="): state = .extensionValueStart
                case UInt8(ascii: ";"): state = .extensionNameStart
                default: throw Malformed(problem: "white space in a chunk line not followed by an extension")
                }
            case .extensionValueStart:
                switch byte {
                case 0x20, 0x09: break
                case UInt8(ascii: "\""): state = .extensionQuoted
                case _ where MessageSyntax.isTokenByte(byte): state = .extensionToken
                default: throw Malformed(problem: "malformed chunk extension value")
                }
            case .extensionToken:
                if MessageSyntax.isTokenByte(byte) { break }
                state = try afterSizeOrValue(byte)
            case .extensionQuoted:
                switch byte {
                case UInt8(ascii: "\""): state = .afterExtensionQuoted
                case UInt8(ascii: "\\"): state = .extensionQuotedPair
                case 0x09, 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E, 0x80...0xFF: break
                default: throw Malformed(problem: "control character in a quoted chunk extension")
                }
            case .extensionQuotedPair:
                guard MessageSyntax.isFieldValueByte(byte) else {
                    throw Malformed(problem: "control character in a quoted chunk extension")
                }
                state = .extensionQuoted
            case .afterExtensionQuoted:
                state = try afterSizeOrValue(byte)
            case .sizeLF:
                guard byte == 0x0A else { throw Malformed(problem: "chunk line not ended by CRLF") }
                lineLength = 0
                state = size == 0 ? .trailerLineStart : .data(remaining: size)
                index += 1
                continue
            case .data(let remaining):
                let take = min(remaining, bytes.count - index)
                data(index..<(index + take))
                index += take
                state = remaining - take == 0 ? .dataCR : .data(remaining: remaining - take)
                continue
            case .dataCR:
                guard byte == 0x0D else { throw Malformed(problem: "chunk data longer than its size") }
                state = .dataLF
            case .dataLF:
                guard byte == 0x0A else { throw Malformed(problem: "chunk data not ended by CRLF") }
                size = 0
                state = .size(digits: 0)
                index += 1
                continue
            case .trailerLineStart:
                if byte == 0x0D {
                    state = .trailerLF(empty: true)
                } else if MessageSyntax.isTokenByte(byte) {
                    state = .trailerName
                } else {
                    throw Malformed(problem: byte == 0x20 || byte == 0x09
                                    ? "obsolete line folding in a trailer" : "malformed trailer field")
                }
            case .trailerName:
                if byte == UInt8(ascii: ":") {
                    state = .trailerValue
                } else if !MessageSyntax.isTokenByte(byte) {
                    throw Malformed(problem: "malformed trailer field name")
                }
            case .trailerValue:
                if byte == 0x0D {
                    state = .trailerLF(empty: false)
                } else if !MessageSyntax.isFieldValueByte(byte) {
                    throw Malformed(problem: "control character in a trailer value")
                }
            case .trailerLF(let empty):
                guard byte == 0x0A else { throw Malformed(problem: "trailer line not ended by CRLF") }
                if empty {
                    state = .done
                    return index + 1
                }
                state = .trailerLineStart
            }
            // Chunk lines and the trailer section count against their limits.
            switch state {
            case .size, .beforeSemicolon, .extensionNameStart, .extensionName, .afterExtensionName,
                 .extensionValueStart, .extensionToken, .extensionQuoted, .extensionQuotedPair, .afterExtensionQuoted,
                 .sizeLF:
                lineLength += 1
                if lineLength > Self.maximumChunkLine { throw Malformed(problem: "chunk line longer than 4 KiB") }
            case .trailerLineStart, .trailerName, .trailerValue, .trailerLF:
                trailerLength += 1
                if trailerLength > Self.maximumTrailerSection {
                    throw Malformed(problem: "trailer section larger than 16 KiB")
                }
            case .data, .dataCR, .dataLF, .done:
                break
            }
            index += 1
        }
        return index
    }

    /// What may follow a chunk size, an extension value or a quoted string: `;`, the line's CR, or
    /// white space that must lead to a `;`.
    private func afterSizeOrValue(_ byte: UInt8) throws(Malformed) -> State {
        switch byte {
        case UInt8(ascii: ";"): .extensionNameStart
        case 0x0D: .sizeLF
        case 0x20, 0x09: .beforeSemicolon
        default: throw Malformed(problem: "invalid byte in a chunk line")
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}

/// How much of a message body is still to come.
package enum MessageBody {
    case none
    case length(Int)
    case chunked(ChunkedScanner)
    /// A response without framing: the body runs until the origin closes.
    case untilClose

    package init(_ head: RequestHead) {
        if head.chunked { self = .chunked(ChunkedScanner()) }
        else if let length = head.contentLength, length > 0 { self = .length(length) }
        else { self = .none }
    }

    /// A response's body framing (RFC 9112 section 6.3): none for HEAD, 1xx, 204 and 304 whatever
    /// the head says; chunked when chunked is the last coding; else Content-Length; else (another
    /// final coding, or no framing at all) until the origin closes.
    package init(response head: ResponseHead, requestMethod: String) {
        if requestMethod == "HEAD" || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
            self = .none
        } else if head.isChunked {
            self = .chunked(ChunkedScanner())
        } else if !head.framing.hasTransferEncoding, let length = head.contentLength {
            self = length == 0 ? .none : .length(length)
        } else {
            self = .untilClose
        }
    }

    package var isComplete: Bool {
        switch self {
        case .none: true
        case .length(let remaining): remaining == 0
        case .chunked(let scanner): scanner.isDone
        case .untilClose: false
        }
    }

    /// Takes the body's share of `bytes`; returns how many bytes that is.
    package mutating func take(_ bytes: UnsafeRawBufferPointer) throws(ChunkedScanner.Malformed) -> Int {
        try take(bytes) { _ in }
    }

    /// The same, handing `content` the ranges of `bytes` that are the body's content: all of them,
    /// except in a chunked body, where only the chunk data is.
    package mutating func take(_ bytes: UnsafeRawBufferPointer,
                               content: (Range<Int>) -> Void) throws(ChunkedScanner.Malformed) -> Int {
        switch self {
        case .none:
            return 0
        case .length(let remaining):
            let count = min(remaining, bytes.count)
            self = .length(remaining - count)
            if count > 0 { content(0..<count) }
            return count
        case .chunked(var scanner):
            let count = try scanner.scan(bytes, data: content)
            self = .chunked(scanner)
            return count
        case .untilClose:
            if !bytes.isEmpty { content(0..<bytes.count) }
            return bytes.count
        }
    }
}
