/// RFC 9112 section 7.1's chunked-body, written from the ABNF as plainly as possible, as the reference
/// the chunked scanner is compared with. Chunk sizes longer than 15 hex digits count as invalid, the
/// limit the scanner sets against overflow.
///
///     chunked-body = *chunk last-chunk trailer-section CRLF
///     chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///     chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
///     chunk-ext-val = token / quoted-string
///     trailer-section = *( field-line CRLF ),  field-line = field-name ":" OWS field-value OWS
enum ChunkedBodyGrammar: Equatable {
    /// A whole body of this many bytes starts the input.
    case complete(Int)
    /// What there is could still become a body.
    case incomplete
    case invalid

    init(_ bytes: UnsafeRawBufferPointer) {
        var reader = Reader(bytes: bytes)
        do {
            self = .complete(try reader.body())
        } catch Reader.Stop.incomplete {
            self = .incomplete
        } catch {
            self = .invalid
        }
    }

    private struct Reader {
        enum Stop: Error { case incomplete, invalid }
        let bytes: UnsafeRawBufferPointer
        var index = 0

        func peek() throws(Stop) -> UInt8 {
            guard index < bytes.count else { throw .incomplete }
            return bytes[index]
        }

        mutating func take(_ byte: UInt8) throws(Stop) {
            guard try peek() == byte else { throw .invalid }
            index += 1
        }

        mutating func crlf() throws(Stop) {
            try take(0x0D)
            try take(0x0A)
        }

        mutating func whitespace() throws(Stop) {
            while true {
                let byte = try peek()
                guard byte == 0x20 || byte == 0x09 else { return }
                index += 1
            }
        }

        mutating func token() throws(Stop) {
            guard isTokenByte(try peek()) else { throw .invalid }
            while isTokenByte(try peek()) { index += 1 }
        }

        mutating func quotedString() throws(Stop) {
            try take(UInt8(ascii: "\""))
            while true {
                let byte = try peek()
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return
                case UInt8(ascii: "\\"):
                    let escaped = try peek()
                    guard escaped == 0x09 || escaped >= 0x20 && escaped != 0x7F else { throw .invalid }
                    index += 1
                case 0x09, 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E, 0x80...0xFF: continue
                default: throw .invalid
                }
            }
        }

        /// The chunk size; its extensions and CRLF are read too.
        mutating func sizeLine() throws(Stop) -> Int {
            var size = 0
            var digits = 0
            while let digit = hexValue(try peek()) {
                digits += 1
                guard digits <= 15 else { throw .invalid }
                size = size << 4 | digit
                index += 1
            }
            guard digits > 0 else { throw .invalid }
            while true {
                // BWS only ever comes before a ";": "5 \r\n" is not a size line.
                let beforeSpace = index
                try whitespace()
                guard try peek() == UInt8(ascii: ";") else {
                    guard index == beforeSpace else { throw .invalid }
                    break
                }
                index += 1
                try whitespace()
                try token()
                // BWS belongs to "=" here: without one it is not part of the extension (RFC 9112 7.1.1).
                let afterName = index
                try whitespace()
                if try peek() == UInt8(ascii: "=") {
                    index += 1
                    try whitespace()
                    if try peek() == UInt8(ascii: "\"") { try quotedString() } else { try token() }
                } else {
                    index = afterName
                }
            }
            try crlf()
            return size
        }

        mutating func body() throws(Stop) -> Int {
            while true {
                let size = try sizeLine()
                if size == 0 { break }
                guard bytes.count - index >= size else { throw .incomplete }
                index += size
                try crlf()
            }
            // Trailer fields, then the empty line.
            while try peek() != 0x0D {
                try token()
                try take(UInt8(ascii: ":"))
                while try peek() != 0x0D {
                    let byte = try peek()
                    guard byte == 0x09 || byte >= 0x20 && byte != 0x7F else { throw .invalid }
                    index += 1
                }
                try crlf()
            }
            try crlf()
            return index
        }

        func hexValue(_ byte: UInt8) -> Int? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }
    }
}

/// RFC 9110 section 5.6.2.
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
         UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
         UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        true
    default:
        false
    }
}
