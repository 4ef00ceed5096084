/// Why bytes could not be read as TLS: the record layer lost sync, a limit was hit, or a message broke
/// its grammar. Never thrown for bytes that are merely incomplete.
public enum TLSWireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A record header whose content type TLS does not define: the stream is not TLS.
    case unknownContentType(UInt8)
    /// A record header whose version is not 0x0300...0x0304.
    case unsupportedRecordVersion(UInt16)
    /// A record longer than any TLS version allows (`TLSHandshakeReader.maximumRecordLength`).
    case recordTooLong(length: Int)
    /// A handshake message longer than the reader's limit (for a Certificate, the size Apple's TLS stack
    /// takes: `isOversizedCertificate`).
    case handshakeMessageTooLong(type: HandshakeType, length: Int, limit: Int)
    /// A non-handshake record arrived while a handshake message was only partly read.
    case interleavedRecord(ContentType)
    /// A message (`ClientHello`, `ServerHello`, ...) that does not follow its grammar.
    case malformed(message: String, reason: String)
    /// A parser was handed a handshake message of another type.
    case unexpectedMessage(expected: HandshakeType, got: HandshakeType)

    /// A Certificate message larger than a device takes: a refusal of the server, not bytes that are
    /// not TLS.
    public var isOversizedCertificate: Bool {
        if case .handshakeMessageTooLong(let type, _, _) = self { return type == .certificate }
        return false
    }

    public var description: String {
        switch self {
        case .unknownContentType(let byte):
            return "not a TLS record: content type \(hexByte(byte))\(Self.hint(byte))"
        case .unsupportedRecordVersion(let version):
            return "not a TLS record: record version \(hex16(version))"
        case .recordTooLong(let length):
            return "TLS record of \(length) bytes exceeds the \(TLSHandshakeReader.maximumRecordLength)-byte maximum"
        case .handshakeMessageTooLong(let type, let length, let limit) where type == .certificate:
            return "the server's Certificate message of \(length) bytes exceeds the \(limit) bytes a TLS client built"
                + " on BoringSSL's default takes, as Apple's does: the device refuses this chain too"
        case .handshakeMessageTooLong(let type, let length, let limit):
            return "handshake message \(type) of \(length) bytes exceeds the \(limit)-byte limit"
        case .interleavedRecord(let type):
            return "\(type.name) record inside an unfinished handshake message"
        case .malformed(let message, let reason):
            return "malformed \(message): \(reason)"
        case .unexpectedMessage(let expected, let got):
            return "expected \(expected), got \(got)"
        }
    }

    /// What a first byte suggests the stream is instead, so a log line says "cleartext HTTP" plainly.
    private static func hint(_ byte: UInt8) -> String {
        if byte >= 0x80 { return " (an SSL 2.0 record?)" }
        if byte >= 0x20 && byte < 0x7F {
            return " ('\(Character(Unicode.Scalar(byte)))': cleartext, not TLS)"
        }
        return ""
    }
}
