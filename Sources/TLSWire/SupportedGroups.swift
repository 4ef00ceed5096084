/// The supported_groups extension's data (RFC 8446 section 4.2.7; RFC 8422 section 5.1.1 calls it
/// elliptic_curves): the client's groups, most preferred first.
enum SupportedGroups {
    /// At most this many groups are kept; real clients send under a dozen, and a hostile list of 32,000
    /// should not cost the proxy 64 KiB per connection. Later ones still count for `postQuantum`.
    static let maximumKept = 64

    /// The groups as sent (GREASE included) and whether any of them, kept or not, is post-quantum.
    static func groups(_ data: inout ByteCursor) throws(TLSWireError) -> (groups: [NamedGroup], postQuantum: Bool) {
        var list = try data.vector(lengthBytes: 2, "supported_groups named_group_list", range: 2...0xFFFE)
        try data.expectEnd("supported_groups")
        guard list.remaining % 2 == 0 else {
            throw data.failure("supported_groups named_group_list length \(list.remaining) is odd")
        }
        var groups: [NamedGroup] = []
        groups.reserveCapacity(min(list.remaining / 2, maximumKept))
        var postQuantum = false
        while !list.isAtEnd {
            let group = NamedGroup(rawValue: try list.uint16("named group"))
            postQuantum = postQuantum || group.isPostQuantum
            if groups.count < maximumKept { groups.append(group) }
        }
        return (groups, postQuantum)
    }
}
