/// The key_share extension's data (RFC 8446 section 4.2.8), whose grammar differs by message: a
/// ClientHello lists shares, a ServerHello carries one, a HelloRetryRequest names only a group.
enum KeyShare {
    /// At most this many client shares are kept (clients send one to three).
    static let maximumKept = 16

    /// KeyShareClientHello: `client_shares<0..2^16-1>`; each share's group and key length, and whether
    /// any share, kept or not, is post-quantum.
    static func clientShares(_ data: inout ByteCursor) throws(TLSWireError) -> (shares: [KeyShareEntry], postQuantum: Bool) {
        var list = try data.vector(lengthBytes: 2, "key_share client_shares")
        try data.expectEnd("key_share")
        var shares: [KeyShareEntry] = []
        var postQuantum = false
        while !list.isAtEnd {
            let share = try entry(&list, "key_share entry \(shares.count)")
            postQuantum = postQuantum || share.group.isPostQuantum
            if shares.count < maximumKept { shares.append(share) }
        }
        return (shares, postQuantum)
    }

    /// KeyShareServerHello: one `server_share`.
    static func serverShare(_ data: inout ByteCursor) throws(TLSWireError) -> KeyShareEntry {
        let share = try entry(&data, "key_share server_share")
        try data.expectEnd("key_share")
        return share
    }

    /// KeyShareHelloRetryRequest: the `selected_group` the client is to send a share for.
    static func selectedGroup(_ data: inout ByteCursor) throws(TLSWireError) -> NamedGroup {
        let group = NamedGroup(rawValue: try data.uint16("key_share selected_group"))
        try data.expectEnd("key_share")
        return group
    }

    /// KeyShareEntry: a group, then `key_exchange<1..2^16-1>`.
    private static func entry(_ data: inout ByteCursor, _ field: @autoclosure () -> String) throws(TLSWireError) -> KeyShareEntry {
        let group = NamedGroup(rawValue: try data.uint16("\(field()) group"))
        let key = try data.vector(lengthBytes: 2, "\(field()) key_exchange", range: 1...0xFFFF)
        return KeyShareEntry(group: group, keyExchangeLength: key.remaining)
    }
}
