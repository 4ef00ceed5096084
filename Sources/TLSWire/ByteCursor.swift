/// A bounds-checked reader over a message body: every read either fits or throws `malformed`, naming
/// the message and the field, so no length in the input can make a parser trap. Field names are
/// autoclosures so a successful parse never formats one.
struct ByteCursor {
    private let bytes: [UInt8]
    private(set) var position: Int
    private let end: Int
    /// The message being parsed, for errors ("ClientHello").
    let message: String

    init(_ bytes: [UInt8], message: String) {
        self.bytes = bytes
        self.position = 0
        self.end = bytes.count
        self.message = message
    }

    private init(bytes: [UInt8], position: Int, end: Int, message: String) {
        self.bytes = bytes
        self.position = position
        self.end = end
        self.message = message
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position == end }

    func failure(_ reason: String) -> TLSWireError {
        .malformed(message: message, reason: reason)
    }

    private func need(_ count: Int, _ field: @autoclosure () -> String) throws(TLSWireError) {
        guard count <= remaining else {
            throw failure("\(field()) needs \(Self.bytes(count)), \(remaining) left")
        }
    }

    mutating func uint8(_ field: @autoclosure () -> String) throws(TLSWireError) -> UInt8 {
        try need(1, field())
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint16(_ field: @autoclosure () -> String) throws(TLSWireError) -> UInt16 {
        try need(2, field())
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    mutating func uint24(_ field: @autoclosure () -> String) throws(TLSWireError) -> Int {
        try need(3, field())
        defer { position += 3 }
        return Int(bytes[position]) << 16 | Int(bytes[position + 1]) << 8 | Int(bytes[position + 2])
    }

    /// A copy of the next `count` bytes.
    mutating func bytes(_ count: Int, _ field: @autoclosure () -> String) throws(TLSWireError) -> [UInt8] {
        try need(count, field())
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    /// The next vector (RFC 8446 section 3.4): a big-endian length of `lengthBytes` bytes, then that many
    /// bytes, returned as a cursor confined to them. `range` is the length the grammar allows.
    mutating func vector(lengthBytes: Int, _ field: @autoclosure () -> String,
                         range: ClosedRange<Int>? = nil) throws(TLSWireError) -> ByteCursor {
        let length: Int
        switch lengthBytes {
        case 1: length = Int(try uint8("\(field()) length"))
        case 2: length = Int(try uint16("\(field()) length"))
        default: length = try uint24("\(field()) length")
        }
        if let range, !range.contains(length) {
            throw failure("\(field()) length \(length) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        try need(length, field())
        defer { position += length }
        return ByteCursor(bytes: bytes, position: position, end: position + length, message: message)
    }

    /// The rest of this cursor's bytes, copied; for a vector read whole.
    func rest() -> [UInt8] {
        Array(bytes[position..<end])
    }

    func expectEnd(_ field: @autoclosure () -> String) throws(TLSWireError) {
        guard isAtEnd else { throw failure("\(Self.bytes(remaining)) left over after \(field())") }
    }

    private static func bytes(_ count: Int) -> String {
        count == 1 ? "1 byte" : "\(count) bytes"
    }
}
