/// A QUIC version as the long header carries it. The Initial reader knows version 1 (RFC 9000 and
/// RFC 9001) and version 2 (RFC 9369), which differ only in what an Initial packet is protected with
/// and in its type bits, so that a middlebox reading version 1 does not read version 2 by accident.
public struct QUICVersion: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public static let version1 = QUICVersion(0x0000_0001)
    public static let version2 = QUICVersion(0x6B33_43CF)

    public init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Versions whose Initial packets the reader can decrypt.
    public var isSupported: Bool { self == .version1 || self == .version2 }

    /// The salt of HKDF-Extract for the Initial secrets (RFC 9001 section 5.2; RFC 9369 section 3.3.1).
    public var initialSalt: [UInt8]? {
        switch self {
        case .version1:
            [0x38, 0x76, 0x2C, 0xF7, 0xF5, 0x59, 0x34, 0xB3, 0x4D, 0x17,
             0x9A, 0xE6, 0xA4, 0xC8, 0x0C, 0xAD, 0xCC, 0xBB, 0x7F, 0x0A]
        case .version2:
            [0x0D, 0xED, 0xE3, 0xDE, 0xF7, 0x00, 0xA6, 0xDB, 0x81, 0x93,
             0x81, 0xBE, 0x6E, 0x26, 0x9D, 0xCB, 0xF9, 0xBD, 0x2E, 0xD9]
        default:
            nil
        }
    }

    /// The HKDF labels of the packet key, IV and header-protection key: "quic key", "quic iv",
    /// "quic hp" in version 1, "quicv2 key", ... in version 2 (RFC 9369 section 3.3.2).
    public var keyLabels: (key: String, iv: String, hp: String)? {
        switch self {
        case .version1: ("quic key", "quic iv", "quic hp")
        case .version2: ("quicv2 key", "quicv2 iv", "quicv2 hp")
        default: nil
        }
    }

    /// What the long header's type bits (0x30 of the first byte) mean in this version.
    public func packetType(bits: UInt8) -> QUICLongPacketType? {
        switch self {
        case .version1: [.initial, .zeroRTT, .handshake, .retry][Int(bits & 3)]
        // RFC 9369 section 3.2: the types rotate by one.
        case .version2: [.retry, .initial, .zeroRTT, .handshake][Int(bits & 3)]
        default: nil
        }
    }

    /// The type bits of `type` in this version (for writing a packet).
    public func typeBits(_ type: QUICLongPacketType) -> UInt8? {
        (0...3).first { packetType(bits: UInt8($0)) == type }.map(UInt8.init)
    }

    public var description: String {
        switch self {
        case .version1: "1"
        case .version2: "2"
        default: hex32(rawValue)
        }
    }
}

/// The four long-header packet types of QUIC versions 1 and 2 (RFC 9000 section 17.2).
public enum QUICLongPacketType: String, Sendable, CustomStringConvertible {
    case initial = "Initial"
    case zeroRTT = "0-RTT"
    case handshake = "Handshake"
    case retry = "Retry"

    public var description: String { rawValue }
}
