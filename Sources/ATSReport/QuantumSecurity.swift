import TLSWire
import TrafficLogs

/// Whether a destination's server is quantum-secure for a client that offers a post-quantum key
/// exchange (iOS 26 offers X25519MLKEM768 in every TLS 1.3 ClientHello).
public enum QuantumStatus: String, CaseIterable, Sendable {
    /// Every handshake with a post-quantum offer used a post-quantum group.
    case postQuantum = "post-quantum"
    /// A handshake whose client offered a post-quantum group got a classical one (or none): recorded
    /// traffic that can be decrypted later ("harvest now, decrypt later").
    case classical
    /// Never seen with a post-quantum offer: the records cannot tell.
    case unknown
}

/// Which logged group names are post-quantum: TLSWire's registry and predicate (one definition for the
/// proxy, diagnose and the report), read without regard to case, as captures from other tools spell
/// names their own way (`x25519mlkem768`, `0x11ec`).
public enum PostQuantumGroups {
    private static let byLowercaseName: [String: NamedGroup] = Dictionary(
        NamedGroup.names.map { ($0.value.lowercased(), NamedGroup(rawValue: $0.key)) }, uniquingKeysWith: { first, _ in first })

    /// `X25519MLKEM768` or `0x11EC`: true; `x25519`, `secp256r1`, `0x001D`: false.
    public static func contains(_ group: String) -> Bool {
        let lower = group.lowercased()
        if lower.hasPrefix("0x"), lower.count <= 6, let code = UInt16(lower.dropFirst(2), radix: 16) {
            return NamedGroup(rawValue: code).isPostQuantum
        }
        return byLowercaseName[lower]?.isPostQuantum ?? false
    }
}

extension DestinationTraffic {
    /// The destination's quantum-secure status from its records' `key_exchange` and `pq_offered`; nil
    /// for cleartext destinations, which have no key exchange to judge. A post-quantum group chosen
    /// means one was offered, whatever the record says about the offer.
    public var quantum: QuantumStatus? {
        guard scheme == "https" else { return nil }
        var sawPostQuantum = false
        for exchange in keyExchanges {
            let postQuantum = exchange.group.map(PostQuantumGroups.contains) ?? false
            if exchange.pqOffered == true, !postQuantum { return .classical }
            if postQuantum { sawPostQuantum = true }
        }
        return sawPostQuantum ? .postQuantum : .unknown
    }

    /// The groups the server chose, by name (`none` for a handshake without one).
    public var keyExchangeGroups: [String] { Set(keyExchanges.map { $0.group ?? "none" }).sorted() }
}
