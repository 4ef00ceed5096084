/// An alert's level byte (RFC 5246 section 7.2).
public struct AlertLevel: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let warning = AlertLevel(rawValue: 1)
    public static let fatal = AlertLevel(rawValue: 2)

    public var description: String {
        switch rawValue {
        case 1: "warning"
        case 2: "fatal"
        default: "level \(rawValue)"
        }
    }
}

/// A plaintext alert: one seen on the wire, or one the proxy sends to end a handshake it blocks.
public struct TLSAlert: Sendable, Equatable {
    public var level: AlertLevel
    /// The RFC calls this field `description`; it is the alert's code.
    public var description: AlertDescription

    public init(level: AlertLevel, description: AlertDescription) {
        self.level = level
        self.description = description
    }

    /// `fatal protocol_version(70)`, for a log line.
    public var summary: String { "\(level) \(description)" }

    /// A whole alert record of level fatal: content type 21, `recordVersion`, length 2, level, description.
    /// Use the version the server's records carry (the server-side reader's `firstRecordVersion`):
    /// a client that has already processed a ServerHello (OpenSSL, for one) rejects a record whose
    /// version differs from the negotiated one before reading it as an alert.
    public static func fatal(_ description: AlertDescription, recordVersion: UInt16) -> [UInt8] {
        [ContentType.alert.rawValue, UInt8(recordVersion >> 8), UInt8(recordVersion & 0xFF), 0, 2,
         AlertLevel.fatal.rawValue, description.rawValue]
    }
}
