/// The frames of a decrypted Initial packet (RFC 9000 section 12.4, Table 3), read one at a time:
/// the CRYPTO frames are handed out, PADDING, PING, ACK and CONNECTION_CLOSE are read past, and any
/// other frame, which an Initial may not carry, is malformed.
public struct QUICInitialFrames {
    /// One CRYPTO frame: where its data sits in the stream and in the payload.
    public struct Crypto: Equatable, Sendable {
        public var offset: Int
        /// The frame's data, as a range of the payload.
        public var data: Range<Int>
    }

    /// Offsets in the CRYPTO stream stop at 2^62 - 1 (RFC 9000 section 19.6).
    static let maximumStreamOffset: UInt64 = (1 << 62) - 1

    private var cursor: QUICCursor
    /// Frames read so far, of any type.
    public private(set) var count = 0

    public init(payload: UnsafeRawBufferPointer) {
        cursor = QUICCursor(payload)
    }

    /// The next CRYPTO frame, or nil at the end of the payload. A payload without any frame is
    /// malformed (RFC 9000 section 12.4).
    public mutating func nextCrypto() throws(QUICInitialError) -> Crypto? {
        while !cursor.isAtEnd {
            let type = try cursor.varint("a frame type")
            count += 1
            switch type {
            case 0x00:
                // PADDING comes in runs, to the end of the packet more often than not.
                cursor.skipZeros()
            case 0x01:
                break
            case 0x02, 0x03:
                try skipAck(withECN: type == 0x03)
            case 0x06:
                let offset = try cursor.varint("a CRYPTO frame's offset")
                let length = try cursor.length("a CRYPTO frame's data")
                guard offset + UInt64(length) <= Self.maximumStreamOffset else {
                    throw .malformed("a CRYPTO frame ends past offset 2^62-1")
                }
                let start = cursor.position
                try cursor.skip(length, "a CRYPTO frame's data")
                return Crypto(offset: Int(offset), data: start..<start + length)
            case 0x1C:
                _ = try cursor.varint("CONNECTION_CLOSE's error code")
                _ = try cursor.varint("CONNECTION_CLOSE's frame type")
                try cursor.skip(try cursor.length("CONNECTION_CLOSE's reason"), "CONNECTION_CLOSE's reason")
            default:
                throw .malformed("frame type 0x\(String(type, radix: 16)) is not allowed in an Initial packet")
            }
        }
        if count == 0 { throw .malformed("a packet without frames") }
        return nil
    }

    /// ACK (RFC 9000 section 19.3): largest, delay, range count, first range, then gap and length
    /// per range, and three ECN counts for type 0x03.
    private mutating func skipAck(withECN: Bool) throws(QUICInitialError) {
        _ = try cursor.varint("ACK's largest acknowledged")
        _ = try cursor.varint("ACK's delay")
        let ranges = try cursor.varint("ACK's range count")
        _ = try cursor.varint("ACK's first range")
        // Each range takes at least two bytes, so a count the payload cannot hold is cut short here.
        guard ranges <= UInt64(cursor.remaining / 2) else { throw .tooShort("ACK's \(ranges) ranges") }
        for _ in 0..<ranges {
            _ = try cursor.varint("an ACK gap")
            _ = try cursor.varint("an ACK range")
        }
        if withECN {
            for _ in 0..<3 { _ = try cursor.varint("an ACK ECN count") }
        }
    }
}

extension QUICInitialFrames {
    /// A variable-length integer in its shortest form (RFC 9000 section 16); at most 2^62 - 1.
    public static func varint(_ value: UInt64) -> [UInt8] {
        precondition(value <= maximumStreamOffset, "a QUIC varint holds at most 62 bits")
        let lengthBits = value < 0x40 ? 0 : value < 0x4000 ? 1 : value < 0x4000_0000 ? 2 : 3
        let length = 1 << lengthBits
        var bytes = (0..<length).map { UInt8(truncatingIfNeeded: value >> (8 * (length - 1 - $0))) }
        bytes[0] |= UInt8(lengthBits << 6)
        return bytes
    }

    /// A CRYPTO frame (RFC 9000 section 19.6) carrying `data` at `offset` of the stream, as a
    /// client writes one; for building Initial packets in tests and benchmarks.
    public static func crypto(offset: Int, _ data: some Collection<UInt8>) -> [UInt8] {
        [0x06] + varint(UInt64(offset)) + varint(UInt64(data.count)) + data
    }
}
