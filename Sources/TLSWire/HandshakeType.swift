/// The type byte of a handshake message (RFC 8446 section 4, RFC 5246 section 7.4). A struct, not an
/// enum, so a type this table does not name still reads and prints.
public struct HandshakeType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let helloRequest = HandshakeType(rawValue: 0)
    public static let clientHello = HandshakeType(rawValue: 1)
    public static let serverHello = HandshakeType(rawValue: 2)
    public static let newSessionTicket = HandshakeType(rawValue: 4)
    public static let endOfEarlyData = HandshakeType(rawValue: 5)
    public static let encryptedExtensions = HandshakeType(rawValue: 8)
    public static let certificate = HandshakeType(rawValue: 11)
    public static let serverKeyExchange = HandshakeType(rawValue: 12)
    public static let certificateRequest = HandshakeType(rawValue: 13)
    public static let serverHelloDone = HandshakeType(rawValue: 14)
    public static let certificateVerify = HandshakeType(rawValue: 15)
    public static let clientKeyExchange = HandshakeType(rawValue: 16)
    public static let finished = HandshakeType(rawValue: 20)
    public static let certificateStatus = HandshakeType(rawValue: 22)
    public static let keyUpdate = HandshakeType(rawValue: 24)
    public static let messageHash = HandshakeType(rawValue: 254)

    /// The RFC's name (`server_hello`), or nil for a type this table does not know.
    public var name: String? {
        switch rawValue {
        case 0: "hello_request"
        case 1: "client_hello"
        case 2: "server_hello"
        case 4: "new_session_ticket"
        case 5: "end_of_early_data"
        case 8: "encrypted_extensions"
        case 11: "certificate"
        case 12: "server_key_exchange"
        case 13: "certificate_request"
        case 14: "server_hello_done"
        case 15: "certificate_verify"
        case 16: "client_key_exchange"
        case 20: "finished"
        case 22: "certificate_status"
        case 24: "key_update"
        case 254: "message_hash"
        default: nil
        }
    }

    /// `server_hello(2)`, or `handshake type 99` for an unknown one.
    public var description: String {
        guard let name else { return "handshake type \(rawValue)" }
        return "\(name)(\(rawValue))"
    }
}
