/// An IPv4 or IPv6 address. IPv4-mapped IPv6 addresses are stored as the IPv4 address they map (R6a).
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)
    case v6(UInt128)

    public var isIPv4: Bool { if case .v4 = self { true } else { false } }

    /// Canonical text: dotted quad for IPv4, RFC 5952 for IPv6.
    public var description: String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\((value >> 16) & 0xFF).\((value >> 8) & 0xFF).\(value & 0xFF)"
        case .v6(let value):
            return IPAddress.formatIPv6(value)
        }
    }

    /// Parses an address as an OS resolver reads a host name (inet_aton for IPv4: 1 to 4 parts,
    /// decimal, octal with a leading 0, hexadecimal with 0x; plus a single trailing dot as URL parsers
    /// allow), or IPv6 text. Returns nil for anything that is not an address.
    public static func parseResolverHost(_ text: Substring) -> IPAddress? {
        if text.contains(":") { return parseIPv6(text).map(normalizingMapped) }
        return parseIPv4Lenient(text).map(IPAddress.v4)
    }

    /// Parses a strict address, as used in NSExceptionDomains keys (inet_pton: four decimal octets
    /// without leading zeros, or IPv6 text).
    public static func parseStrict(_ text: Substring) -> IPAddress? {
        if text.contains(":") { return parseIPv6(text).map(normalizingMapped) }
        return parseIPv4Strict(text).map(IPAddress.v4)
    }

    static func normalizingMapped(_ value: UInt128) -> IPAddress {
        if value >> 32 == 0xFFFF { return .v4(UInt32(truncatingIfNeeded: value)) }
        return .v6(value)
    }

    /// True when the text's last label is numeric, which makes it an IPv4 spelling or invalid:
    /// WHATWG's "ends in a number" rule. `1.2.3.999` must not pass as a host name.
    static func endsInNumber(_ text: Substring) -> Bool {
        var labels = text.split(separator: ".", omittingEmptySubsequences: false)
        if labels.last == "" && labels.count > 1 { labels.removeLast() }
        guard let last = labels.last, !last.isEmpty else { return false }
        if last.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        let lower = last.lowercased()
        if lower.hasPrefix("0x"), lower.dropFirst(2).allSatisfy(\.isHexDigit) { return true }
        return false
    }

    // MARK: IPv4

    static func parseIPv4Lenient(_ text: Substring) -> UInt32? {
        var body = text
        if body.hasSuffix(".") { body = body.dropLast() }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        numbers.reserveCapacity(4)
        for part in parts {
            guard let n = parseNumericPart(part) else { return nil }
            numbers.append(n)
        }
        // Every part but the last is one byte; the last fills the remaining bytes.
        for n in numbers.dropLast() where n > 0xFF { return nil }
        let lastBits = 8 * (5 - numbers.count)
        guard numbers.last! < (UInt64(1) << lastBits) else { return nil }
        var value: UInt64 = 0
        for (index, n) in numbers.dropLast().enumerated() { value |= n << (24 - 8 * index) }
        value |= numbers.last!
        return UInt32(value)
    }

    /// One inet_aton part: `0x1F` hex, `017` octal, `15` decimal; "0x" alone is 0.
    private static func parseNumericPart(_ part: Substring) -> UInt64? {
        guard !part.isEmpty else { return nil }
        let bytes = Array(part.utf8)
        var radix: UInt64 = 10
        var digits = bytes[...]
        if bytes.count >= 2, bytes[0] == UInt8(ascii: "0"), bytes[1] | 0x20 == UInt8(ascii: "x") {
            radix = 16
            digits = bytes[2...]
        } else if bytes.count >= 2, bytes[0] == UInt8(ascii: "0") {
            radix = 8
            digits = bytes[1...]
        }
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            guard digit < radix else { return nil }
            value = value * radix + digit
            if value > UInt64(UInt32.max) { return nil }
        }
        return value
    }

    static func parseIPv4Strict(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.utf8.count),
                  part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  part.utf8.count == 1 || part.utf8.first != UInt8(ascii: "0"),
                  let octet = UInt32(part), octet <= 255 else { return nil }
            value = value << 8 | octet
        }
        return value
    }

    // MARK: IPv6

    static func parseIPv6(_ text: Substring) -> UInt128? {
        guard !text.isEmpty, !text.contains("%") else { return nil }
        let halves = text.split(separator: "::", maxSplits: 2, omittingEmptySubsequences: false)
            .map { Substring($0) }
        guard halves.count <= 2 else { return nil }
        guard let head = parseGroups(halves[0], allowIPv4Tail: halves.count == 1) else { return nil }
        var groups: [UInt16]
        if halves.count == 2 {
            guard let tail = parseGroups(halves[1], allowIPv4Tail: true) else { return nil }
            // "::" stands for at least one zero group.
            guard head.count + tail.count <= 7 else { return nil }
            groups = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            groups = head
        }
        guard groups.count == 8 else { return nil }
        return groups.reduce(UInt128(0)) { $0 << 16 | UInt128($1) }
    }

    private static func parseGroups(_ text: Substring, allowIPv4Tail: Bool) -> [UInt16]? {
        if text.isEmpty { return [] }
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        var groups: [UInt16] = []
        for (index, piece) in pieces.enumerated() {
            if index == pieces.count - 1, allowIPv4Tail, piece.contains(".") {
                guard let v4 = parseIPv4Strict(piece) else { return nil }
                groups.append(UInt16(v4 >> 16))
                groups.append(UInt16(v4 & 0xFFFF))
                continue
            }
            guard (1...4).contains(piece.utf8.count), let group = UInt16(piece, radix: 16) else { return nil }
            groups.append(group)
        }
        return groups
    }

    static func formatIPv6(_ value: UInt128) -> String {
        let groups = (0..<8).map { UInt16(truncatingIfNeeded: value >> (112 - 16 * $0)) }
        // RFC 5952: compress the longest run of two or more zero groups, the first one on a tie.
        var bestStart = -1, bestLength = 0, runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                let length = index - runStart
                if length > bestLength, length >= 2 { bestStart = runStart; bestLength = length }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            range.map { String(groups[$0], radix: 16) }.joined(separator: ":")
        }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}

/// An address prefix such as `198.51.100.0/24` or `2001:db8::/32`.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The network address with host bits cleared.
    public let address: IPAddress
    public let prefixLength: Int

    public init(address: IPAddress, prefixLength: Int) {
        self.prefixLength = prefixLength
        self.address = IPNetwork.mask(address, prefixLength)
    }

    public var description: String { "\(address)/\(prefixLength)" }

    public func contains(_ candidate: IPAddress) -> Bool {
        switch (address, candidate) {
        case (.v4, .v4), (.v6, .v6): return IPNetwork.mask(candidate, prefixLength) == address
        default: return false
        }
    }

    static func mask(_ address: IPAddress, _ length: Int) -> IPAddress {
        switch address {
        case .v4(let value):
            return .v4(length == 0 ? 0 : value & (UInt32.max << (32 - length)))
        case .v6(let value):
            return .v6(length == 0 ? 0 : value & (UInt128.max << (128 - length)))
        }
    }

    /// The result of reading CIDR text, keeping what lint wants to report.
    public struct Parsed: Sendable {
        public var network: IPNetwork
        /// The text had host bits set (`10.0.0.1/8`); the network ignores them.
        public var hadHostBits: Bool
        /// The IPv4 network part had fewer than four octets and was padded (`10/8`).
        public var wasPadded: Bool
    }

    /// Parses `ADDRESS/LENGTH`. IPv4 network parts of one to four decimal octets are padded with zeros
    /// (`10/8` is `10.0.0.0/8`, R8). Returns nil for anything else, including lengths out of range.
    public static func parse(_ text: Substring) -> Parsed? {
        guard let slash = text.firstIndex(of: "/") else { return nil }
        let addressText = text[..<slash]
        let lengthText = text[text.index(after: slash)...]
        guard !lengthText.isEmpty, lengthText.utf8.count <= 3,
              lengthText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let length = Int(lengthText) else { return nil }
        let address: IPAddress
        var padded = false
        if addressText.contains(":") {
            guard let v6 = IPAddress.parseIPv6(addressText) else { return nil }
            address = .v6(v6)
            guard length <= 128 else { return nil }
        } else {
            var octets = addressText.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...4).contains(octets.count) else { return nil }
            if octets.count < 4 {
                padded = true
                octets += Array(repeating: "0", count: 4 - octets.count)
            }
            guard let v4 = IPAddress.parseIPv4Strict(Substring(octets.joined(separator: "."))) else { return nil }
            address = .v4(v4)
            guard length <= 32 else { return nil }
        }
        let network = IPNetwork(address: address, prefixLength: length)
        return Parsed(network: network, hadHostBits: network.address != address, wasPadded: padded)
    }
}
