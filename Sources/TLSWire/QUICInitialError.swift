/// Why a UDP datagram gave no ClientHello. A datagram that holds a valid Initial whose ClientHello
/// is not whole yet is no error (`QUICInitialReading.incomplete`).
public enum QUICInitialError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first byte has the short-header form: a packet of an established connection, or not QUIC.
    case notLongHeader
    /// A long header of a version the reader has no keys for; version 0 is a Version Negotiation
    /// packet, which no client sends.
    case unsupportedVersion(UInt32)
    /// A long-header packet of a known version that is no Initial (0-RTT, Handshake, Retry).
    case notInitial(QUICVersion, QUICLongPacketType)
    /// The datagram ends before the field named.
    case tooShort(String)
    /// The packet does not authenticate under the client Initial keys of its connection ID: not a
    /// client's Initial, or damaged.
    case decryptionFailed(QUICVersion)
    /// The decrypted packet breaks QUIC's grammar (a frame an Initial may not carry, a frame that
    /// overruns the packet, non-zero reserved bits) or its CRYPTO stream is no ClientHello.
    case malformed(String)
    /// The CRYPTO stream reaches past the reader's limit on a ClientHello.
    case clientHelloTooLong(length: Int, limit: Int)
    /// The CRYPTO stream holds a whole ClientHello that TLSWire cannot read.
    case malformedClientHello(TLSWireError)

    /// A short stable name for counting failures by kind (a metric label).
    public var kind: String {
        switch self {
        case .notLongHeader: "not-long-header"
        case .unsupportedVersion: "unsupported-version"
        case .notInitial: "not-initial"
        case .tooShort: "too-short"
        case .decryptionFailed: "decryption-failed"
        case .malformed, .malformedClientHello: "malformed"
        case .clientHelloTooLong: "too-long"
        }
    }

    public var description: String {
        switch self {
        case .notLongHeader:
            "not a QUIC long-header packet"
        case .unsupportedVersion(0):
            "a QUIC Version Negotiation packet (version 0)"
        case .unsupportedVersion(let version):
            "QUIC version \(QUICVersion(version)) is not supported (only 1 and 2)"
        case .notInitial(let version, let type):
            "a QUIC version \(version) \(type) packet, not an Initial"
        case .tooShort(let field):
            "QUIC packet too short: it ends before \(field)"
        case .decryptionFailed(let version):
            "QUIC version \(version) Initial packet does not decrypt with its client Initial keys"
        case .malformed(let reason):
            "malformed QUIC Initial packet: \(reason)"
        case .clientHelloTooLong(let length, let limit):
            "QUIC CRYPTO stream of \(length) bytes exceeds the \(limit)-byte ClientHello limit"
        case .malformedClientHello(let error):
            "QUIC Initial's ClientHello: \(error)"
        }
    }
}
