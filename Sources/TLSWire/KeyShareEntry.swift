/// One entry of a key_share extension (RFC 8446 section 4.2.8): the group and how many bytes of key
/// it carried. The key itself is not kept: nothing the proxy decides depends on it, and a hello may
/// carry several kilobytes of them.
public struct KeyShareEntry: Sendable, Equatable, CustomStringConvertible {
    public var group: NamedGroup
    /// The length of key_exchange: 32 for x25519, 1216 for a client's X25519MLKEM768 share.
    public var keyExchangeLength: Int

    public init(group: NamedGroup, keyExchangeLength: Int) {
        self.group = group
        self.keyExchangeLength = keyExchangeLength
    }

    /// `X25519MLKEM768(1216)`.
    public var description: String { "\(group)(\(keyExchangeLength))" }
}
