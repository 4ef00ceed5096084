@testable import HTTP1

/// At most one Content-Length field, and its value only digits: what a proxy sends on must leave the
/// next recipient no choice between lengths (RFC 9110 section 8.6, RFC 9112 section 6.3).
func singleDecimalContentLength(_ bytes: [UInt8], _ fields: [HeaderField]) -> Bool {
    let lengths = fields.filter { $0.kind == .contentLength }
    guard let length = lengths.first else { return true }
    let value = bytes[length.value]
    return lengths.count == 1 && !value.isEmpty && value.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

/// Whether `bytes` could still become a head: no empty line has ended one yet, and nothing seen so
/// far decides against one (every LF follows a CR, every CR but a last one is followed by an LF, no
/// NUL). A parser that calls anything else incomplete leaves its peer waiting for bytes that can
/// change nothing (RFC 9112 section 2.2: an LF-ended head never holds a CRLFCRLF). A request may
/// start with one skipped empty line.
func couldStillBecomeAHead(_ bytes: UnsafeRawBufferPointer, skippingOneEmptyLine: Bool) -> Bool {
    var start = 0
    if skippingOneEmptyLine, bytes.count >= 2, bytes[0] == 0x0D, bytes[1] == 0x0A { start = 2 }
    var lineStart = start
    var index = start
    while index < bytes.count {
        switch bytes[index] {
        case 0x0D:
            guard index + 1 < bytes.count else { return true }
            guard bytes[index + 1] == 0x0A, index > lineStart else { return false }
            index += 2
            lineStart = index
        case 0x0A, 0:
            return false
        default:
            index += 1
        }
    }
    return true
}
