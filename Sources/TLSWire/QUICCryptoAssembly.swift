/// The client's Initial CRYPTO stream put back together from frames that arrive in any order, split
/// across packets and datagrams (Chrome cuts its ClientHello into several CRYPTO frames, shuffles
/// them and spreads them over two datagrams). It holds at most `limit` bytes of the stream, and at
/// most `maximumPieces` separate pieces, so that no sender can make it grow or slow down.
public struct QUICCryptoAssembly: Sendable, Equatable {
    /// Separate pieces (after merging neighbours) the stream may be in before it is refused.
    public static let maximumPieces = 64

    /// The highest stream offset kept; data past it is refused as too long a ClientHello.
    public let limit: Int
    /// Stream bytes from offset 0; bytes in no piece are zero.
    private var buffer: [UInt8] = []
    /// The received parts of `buffer`, sorted and merged.
    private var pieces: [Range<Int>] = []

    public init(limit: Int) {
        self.limit = limit
    }

    /// The bytes of memory the stream holds.
    public var bufferedBytes: Int { buffer.count }

    /// How many stream bytes from offset 0 have arrived without a gap.
    public var contiguousBytes: Int {
        guard let first = pieces.first, first.lowerBound == 0 else { return 0 }
        return first.upperBound
    }

    /// Adds a CRYPTO frame's data at `offset`. Data seen before (a retransmission) is written again,
    /// since RFC 9000 section 19.6 has the same offset carry the same bytes.
    public mutating func add(offset: Int, _ data: UnsafeRawBufferPointer) throws(QUICInitialError) {
        guard !data.isEmpty else { return }
        let end = offset + data.count
        guard end <= limit else { throw .clientHelloTooLong(length: end, limit: limit) }
        if buffer.count < end { buffer.append(contentsOf: repeatElement(0, count: end - buffer.count)) }
        buffer.withUnsafeMutableBytes { target in
            UnsafeMutableRawBufferPointer(rebasing: target[offset..<end]).copyMemory(from: data)
        }
        insert(offset..<end)
        guard pieces.count <= Self.maximumPieces else {
            throw .malformed("the CRYPTO stream arrived in more than \(Self.maximumPieces) separate pieces")
        }
    }

    /// The ClientHello once the stream's first handshake message is whole; nil while it is not.
    /// Throws when the stream starts with another message, announces one longer than `limit`, or
    /// holds a ClientHello TLSWire cannot read.
    public func clientHello() throws(QUICInitialError) -> ClientHello? {
        let available = contiguousBytes
        guard available >= 1 else { return nil }
        guard buffer[0] == HandshakeType.clientHello.rawValue else {
            throw .malformed("the CRYPTO stream starts with handshake message type \(buffer[0]), not a ClientHello")
        }
        guard available >= 4 else { return nil }
        let length = Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard 4 + length <= limit else { throw .clientHelloTooLong(length: 4 + length, limit: limit) }
        guard available >= 4 + length else { return nil }
        do {
            return try ClientHello(body: Array(buffer[4..<4 + length]))
        } catch {
            throw .malformedClientHello(error)
        }
    }

    /// Records `range` as received, merging it with the pieces it touches or overlaps.
    private mutating func insert(_ range: Range<Int>) {
        // Pieces are few (at most maximumPieces + 1), so a linear pass is the simple and fast one.
        var merged = range
        var kept: [Range<Int>] = []
        kept.reserveCapacity(pieces.count + 1)
        var placed = false
        for piece in pieces {
            if piece.upperBound < merged.lowerBound {
                kept.append(piece)
            } else if merged.upperBound < piece.lowerBound {
                if !placed {
                    kept.append(merged)
                    placed = true
                }
                kept.append(piece)
            } else {
                merged = min(piece.lowerBound, merged.lowerBound)..<max(piece.upperBound, merged.upperBound)
            }
        }
        if !placed { kept.append(merged) }
        pieces = kept
    }
}
