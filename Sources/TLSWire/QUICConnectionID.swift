/// A QUIC connection ID of versions 1 and 2: at most 20 bytes (RFC 9000 section 17.2), held inline,
/// so that reading a header and keying a table by it allocate nothing.
public struct QUICConnectionID: Hashable, Sendable, CustomStringConvertible {
    public static let maximumLength = 20

    public let count: Int
    // Bytes 0-7, 8-15 and 16-19, big-endian, zero past `count`.
    private let first: UInt64
    private let second: UInt64
    private let third: UInt32

    /// Nil for more than 20 bytes.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count <= Self.maximumLength else { return nil }
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        for (index, byte) in bytes.enumerated() {
            let shift = UInt64(56 - 8 * (index % 8))
            switch index / 8 {
            case 0: words.0 |= UInt64(byte) << shift
            case 1: words.1 |= UInt64(byte) << shift
            default: words.2 |= UInt64(byte) << shift
            }
        }
        count = bytes.count
        first = words.0
        second = words.1
        third = UInt32(truncatingIfNeeded: words.2 >> 32)
    }

    public var bytes: [UInt8] {
        (0..<count).map { index in
            switch index / 8 {
            case 0: UInt8(truncatingIfNeeded: first >> UInt64(56 - 8 * index))
            case 1: UInt8(truncatingIfNeeded: second >> UInt64(56 - 8 * (index - 8)))
            default: UInt8(truncatingIfNeeded: third >> UInt32(24 - 8 * (index - 16)))
            }
        }
    }

    public var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
