import TLSWire

/// What an inspected handshake showed about its key exchange, for the record (`key_exchange`,
/// `pq_offered`) and the metrics: what the client offered, not what it could do, and the group the
/// server chose, not whether the handshake then completed.
package struct KeyExchangeFacts: Equatable {
    /// The group the server chose; nil without one (a TLS 1.2 RSA key exchange, a share that could
    /// not be read) or when the handshake ended before the server said.
    package var group: NamedGroup?
    /// The ClientHello offered a hybrid or ML-KEM group.
    package var postQuantumOffered: Bool

    package init(group: NamedGroup?, postQuantumOffered: Bool) {
        self.group = group
        self.postQuantumOffered = postQuantumOffered
    }

    /// The IANA name of every post-quantum group, for the live page's share.
    package static let postQuantumGroupNames: [String] =
        NamedGroup.names.filter { NamedGroup(rawValue: $0.key).isPostQuantum }.map(\.value).sorted()
}
