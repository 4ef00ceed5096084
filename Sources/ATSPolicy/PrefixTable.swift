/// Address prefixes (CIDR keys) with longest-prefix lookup (R8).
///
/// One open-addressing table per prefix length that occurs, searched from the longest length down:
/// at most 33 (IPv4) or 129 (IPv6) probes, in practice a handful, without hashing through SipHash.
package struct PrefixTable<Value: Sendable>: Sendable {
    private struct Level: Sendable {
        var length: Int
        var keys: [UInt128]
        var values: [Value?]
        var mask: Int
    }

    private var ipv4: [Level] = []
    private var ipv6: [Level] = []

    init(_ entries: [(network: IPNetwork, value: Value)]) {
        var grouped: [Int: [(UInt128, Value)]] = [:]
        for (network, value) in entries {
            let (bits, family) = PrefixTable.bits(network.address)
            grouped[network.prefixLength * 2 + family, default: []].append((bits, value))
        }
        for (slot, members) in grouped {
            var capacity = 4
            while capacity < members.count * 2 { capacity <<= 1 }
            var level = Level(length: slot / 2, keys: Array(repeating: 0, count: capacity),
                              values: Array(repeating: nil, count: capacity), mask: capacity - 1)
            for (key, value) in members {
                var index = PrefixTable.hash(key) & level.mask
                while level.values[index] != nil, level.keys[index] != key { index = (index + 1) & level.mask }
                level.keys[index] = key
                level.values[index] = value
            }
            if slot % 2 == 0 { ipv4.append(level) } else { ipv6.append(level) }
        }
        ipv4.sort { $0.length > $1.length }
        ipv6.sort { $0.length > $1.length }
    }

    var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

    /// The value of the longest prefix containing `address`.
    func longestMatch(_ address: IPAddress) -> Value? {
        let (bits, family) = PrefixTable.bits(address)
        let width = family == 0 ? 32 : 128
        for level in family == 0 ? ipv4 : ipv6 {
            let key = level.length == 0 ? 0 : bits & (UInt128.max << (width - level.length))
            var index = PrefixTable.hash(key) & level.mask
            while let value = level.values[index] {
                if level.keys[index] == key { return value }
                index = (index + 1) & level.mask
            }
        }
        return nil
    }

    @inline(__always)
    private static func bits(_ address: IPAddress) -> (UInt128, Int) {
        switch address {
        case .v4(let value): (UInt128(value), 0)
        case .v6(let value): (value, 1)
        }
    }

    @inline(__always)
    private static func hash(_ key: UInt128) -> Int {
        let folded = (UInt64(truncatingIfNeeded: key) ^ UInt64(truncatingIfNeeded: key >> 64)) &* 0x9E37_79B9_7F4A_7C15
        let mixed = (folded ^ (folded >> 31)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 29))
    }
}
