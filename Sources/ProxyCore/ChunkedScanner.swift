/// Finds where a chunked message body ends (RFC 9112 section 7.1) without decoding it, so the proxy
/// can pass the body through verbatim and know where the next pipelined request starts.
struct ChunkedScanner {
    private enum State {
        case size(value: Int, digits: Int, inExtension: Bool)
        case sizeLF
        case data(remaining: Int)
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerLine
        case trailerLF(empty: Bool)
        case done
    }

    private var state = State.size(value: 0, digits: 0, inExtension: false)

    var isDone: Bool { if case .done = state { true } else { false } }

    struct Malformed: Error {}

    /// Consumes bytes of the body; returns how many belong to it (fewer than given once it ends).
    mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> Int {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch state {
            case .done:
                return index
            case .size(let value, let digits, let inExtension):
                if byte == 0x0D {
                    guard digits > 0 else { throw Malformed() }
                    state = .sizeLF
                    // The size is kept in the next state through `value`.
                    pendingSize = value
                } else if inExtension {
                    break
                } else if let digit = hexValue(byte) {
                    guard digits < 15 else { throw Malformed() }
                    state = .size(value: value << 4 | digit, digits: digits + 1, inExtension: false)
                } else if byte == UInt8(ascii: ";") || byte == 0x20 || byte == 0x09 {
                    guard digits > 0 else { throw Malformed() }
                    state = .size(value: value, digits: digits, inExtension: true)
                } else {
                    throw Malformed()
                }
            case .sizeLF:
                guard byte == 0x0A else { throw Malformed() }
                state = pendingSize == 0 ? .trailerLineStart : .data(remaining: pendingSize)
            case .data(let remaining):
                let take = min(remaining, bytes.count - index)
                index += take
                state = remaining - take == 0 ? .dataCR : .data(remaining: remaining - take)
                continue
            case .dataCR:
                guard byte == 0x0D else { throw Malformed() }
                state = .dataLF
            case .dataLF:
                guard byte == 0x0A else { throw Malformed() }
                state = .size(value: 0, digits: 0, inExtension: false)
            case .trailerLineStart:
                state = byte == 0x0D ? .trailerLF(empty: true) : .trailerLine
            case .trailerLine:
                if byte == 0x0D { state = .trailerLF(empty: false) }
            case .trailerLF(let empty):
                guard byte == 0x0A else { throw Malformed() }
                if empty {
                    state = .done
                    return index + 1
                }
                state = .trailerLineStart
            }
            index += 1
        }
        return index
    }

    private var pendingSize = 0

    private func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}

/// How much of a message body is still to come.
enum MessageBody {
    case none
    case length(Int)
    case chunked(ChunkedScanner)
    /// A response without framing: the body runs until the origin closes.
    case untilClose

    init(_ head: RequestHead) {
        if head.chunked { self = .chunked(ChunkedScanner()) }
        else if let length = head.contentLength, length > 0 { self = .length(length) }
        else { self = .none }
    }

    /// A response's body framing (RFC 9112 section 6.3).
    init(response head: ResponseHead, requestMethod: String) {
        if requestMethod == "HEAD" || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
            self = .none
        } else if head.isChunked {
            self = .chunked(ChunkedScanner())
        } else if let length = head.contentLength, length >= 0 {
            self = length == 0 ? .none : .length(length)
        } else {
            self = .untilClose
        }
    }

    var isComplete: Bool {
        switch self {
        case .none: true
        case .length(let remaining): remaining == 0
        case .chunked(let scanner): scanner.isDone
        case .untilClose: false
        }
    }

    /// Takes the body's share of `bytes`; returns how many bytes that is.
    mutating func take(_ bytes: UnsafeRawBufferPointer) throws(ChunkedScanner.Malformed) -> Int {
        switch self {
        case .none:
            return 0
        case .length(let remaining):
            let count = min(remaining, bytes.count)
            self = .length(remaining - count)
            return count
        case .chunked(var scanner):
            let count = try scanner.scan(bytes)
            self = .chunked(scanner)
            return count
        case .untilClose:
            return bytes.count
        }
    }
}
