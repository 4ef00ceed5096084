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

/// The key exchange groups of the IANA TLS Supported Groups registry that are post-quantum: the hybrid
/// and pure ML-KEM groups, and the Kyber drafts that came before them.
public enum PostQuantumGroups {
    static let names: Set<String> = [
        "x25519mlkem768", "secp256r1mlkem768", "secp384r1mlkem1024", "mlkem512", "mlkem768", "mlkem1024",
        "x25519kyber768draft00", "secp256r1kyber768draft00", "x25519kyber512draft00",
    ]
    static let codes: Set<UInt16> = [0x11EB, 0x11EC, 0x11ED, 0x0200, 0x0201, 0x0202, 0x6399, 0x639A, 0xFE30, 0xFE31]

    /// `X25519MLKEM768` or `0x11EC`: true; `x25519`, `secp256r1`, `0x001D`: false.
    public static func contains(_ group: String) -> Bool {
        let lower = group.lowercased()
        if lower.hasPrefix("0x"), let code = UInt16(lower.dropFirst(2), radix: 16) { return codes.contains(code) }
        return names.contains(lower)
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
