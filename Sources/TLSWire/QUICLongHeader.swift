/// The header of one long-header QUIC packet in a datagram (RFC 9000 section 17.2), read up to the
/// protected packet number; offsets count from the start of the datagram. Header protection hides
/// the first byte's low bits and the packet number, so those are read after decryption.
public struct QUICLongHeader: Sendable, Equatable {
    public var version: QUICVersion
    public var type: QUICLongPacketType
    /// The first byte as sent (its low four bits still protected).
    public var protectedFirstByte: UInt8
    public var destinationConnectionID: QUICConnectionID
    public var sourceConnectionID: QUICConnectionID
    /// The Initial's token (from a Retry or a NEW_TOKEN frame), by its length; 0 for other types.
    public var tokenLength: Int
    /// Where the packet starts in the datagram.
    public var start: Int
    /// Where the protected packet number starts.
    public var packetNumberOffset: Int
    /// One past the packet's last byte: the Length field's end, or the datagram's for a Retry.
    public var end: Int

    /// Reads the long header that starts at `start`. A version other than 1 and 2 throws
    /// `unsupportedVersion` as soon as it is read: beyond the invariant fields (RFC 8999) a header
    /// of another version cannot be read.
    public static func read(_ datagram: UnsafeRawBufferPointer, at start: Int) throws(QUICInitialError) -> QUICLongHeader {
        var cursor = QUICCursor(datagram, at: start)
        let first = try cursor.byte("the first byte")
        guard first & 0x80 != 0 else { throw .notLongHeader }
        let version = QUICVersion(try cursor.uint32("the version"))
        guard version.isSupported, let type = version.packetType(bits: (first >> 4) & 3) else {
            throw .unsupportedVersion(version.rawValue)
        }
        let destination = try cursor.connectionID("the destination connection ID")
        let source = try cursor.connectionID("the source connection ID")
        var tokenLength = 0
        if type == .initial {
            tokenLength = try cursor.length("the token length")
            try cursor.skip(tokenLength, "the token")
        }
        if type == .retry {
            return QUICLongHeader(version: version, type: type, protectedFirstByte: first,
                                  destinationConnectionID: destination, sourceConnectionID: source,
                                  tokenLength: 0, start: start, packetNumberOffset: cursor.position,
                                  end: datagram.count)
        }
        let length = try cursor.length("the packet length")
        let packetNumberOffset = cursor.position
        return QUICLongHeader(version: version, type: type, protectedFirstByte: first,
                              destinationConnectionID: destination, sourceConnectionID: source,
                              tokenLength: tokenLength, start: start, packetNumberOffset: packetNumberOffset,
                              end: packetNumberOffset + length)
    }
}

/// A bounds-checked reader of QUIC's fields over a datagram or a decrypted payload: every read
/// fits or throws, so no length in a packet can make the reader trap.
struct QUICCursor {
    let bytes: UnsafeRawBufferPointer
    private(set) var position: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, at position: Int = 0, end: Int? = nil) {
        self.bytes = bytes
        self.position = position
        self.end = end ?? bytes.count
    }

    var isAtEnd: Bool { position >= end }
    var remaining: Int { end - position }

    private func need(_ count: Int, _ field: @autoclosure () -> String) throws(QUICInitialError) {
        guard count <= end - position else { throw .tooShort(field()) }
    }

    mutating func byte(_ field: @autoclosure () -> String) throws(QUICInitialError) -> UInt8 {
        try need(1, field())
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint32(_ field: @autoclosure () -> String) throws(QUICInitialError) -> UInt32 {
        try need(4, field())
        defer { position += 4 }
        return UInt32(bytes[position]) << 24 | UInt32(bytes[position + 1]) << 16
            | UInt32(bytes[position + 2]) << 8 | UInt32(bytes[position + 3])
    }

    mutating func skip(_ count: Int, _ field: @autoclosure () -> String) throws(QUICInitialError) {
        try need(count, field())
        position += count
    }

    /// Moves past a run of zero bytes (PADDING frames).
    mutating func skipZeros() {
        while position < end, bytes[position] == 0 { position += 1 }
    }

    /// A variable-length integer (RFC 9000 section 16): two bits of length, then 6, 14, 30 or 62 bits.
    mutating func varint(_ field: @autoclosure () -> String) throws(QUICInitialError) -> UInt64 {
        try need(1, field())
        let length = 1 << Int(bytes[position] >> 6)
        try need(length, field())
        var value = UInt64(bytes[position] & 0x3F)
        for index in 1..<length { value = value << 8 | UInt64(bytes[position + index]) }
        position += length
        return value
    }

    /// A varint that counts bytes of this datagram: a value no datagram can hold reads as too short.
    mutating func length(_ field: @autoclosure () -> String) throws(QUICInitialError) -> Int {
        let value = try varint(field())
        guard value <= UInt64(end - position) else {
            throw .tooShort("\(field()) of \(value) bytes (\(end - position) left)")
        }
        return Int(value)
    }

    mutating func connectionID(_ field: @autoclosure () -> String) throws(QUICInitialError) -> QUICConnectionID {
        let length = Int(try byte("\(field()) length"))
        guard length <= QUICConnectionID.maximumLength else {
            throw .malformed("\(field()) of \(length) bytes is longer than 20")
        }
        try need(length, field())
        defer { position += length }
        return QUICConnectionID(bytes[position..<position + length])!
    }
}
