/// One whole handshake message as it travelled, reassembled from however many records carried it.
public struct HandshakeMessage: Sendable, Equatable {
    public var type: HandshakeType
    /// The message body, without the 4-byte type and length header.
    public var body: [UInt8]

    public init(type: HandshakeType, body: [UInt8]) {
        self.type = type
        self.body = body
    }
}
