@testable import HTTP1

/// At most one Content-Length field, and its value only digits: what a proxy sends on must leave the
/// next recipient no choice between lengths (RFC 9110 section 8.6, RFC 9112 section 6.3).
func singleDecimalContentLength(_ bytes: [UInt8], _ fields: [HeaderField]) -> Bool {
    let lengths = fields.filter { $0.kind == .contentLength }
    guard let length = lengths.first else { return true }
    let value = bytes[length.value]
    return lengths.count == 1 && !value.isEmpty && value.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}
