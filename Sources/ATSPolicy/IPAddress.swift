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
        if text.containsASCII(UInt8(ascii: ":")) { return parseIPv6(text).map(normalizingMapped) }
        return parseIPv4Lenient(text).map(IPAddress.v4)
    }

    /// Parses a strict address, as used in NSExceptionDomains keys (inet_pton: four decimal octets
    /// without leading zeros, or IPv6 text).
    public static func parseStrict(_ text: Substring) -> IPAddress? {
        if text.containsASCII(UInt8(ascii: ":")) { return parseIPv6(text).map(normalizingMapped) }
        return parseIPv4Strict(text).map(IPAddress.v4)
    }

    static func normalizingMapped(_ value: UInt128) -> IPAddress {
        if value >> 32 == 0xFFFF { return .v4(UInt32(truncatingIfNeeded: value)) }
        return .v6(value)
    }

    // MARK: IPv4

    static func parseIPv4Lenient(_ text: Substring) -> UInt32? {
        var text = text
        return text.withUTF8 { parseIPv4Lenient($0) }
    }

    /// inet_aton over bytes, plus the single trailing dot URL parsers accept. Without allocations: a
    /// numeric host in a request target is read for every request.
    static func parseIPv4Lenient(_ text: UnsafeBufferPointer<UInt8>) -> UInt32? {
        var body = text[...]
        if body.last == UInt8(ascii: ".") { body = body.dropLast() }
        var value: UInt64 = 0
        var count = 0
        var partStart = body.startIndex
        while true {
            let partEnd = body[partStart...].firstIndex(of: UInt8(ascii: ".")) ?? body.endIndex
            guard count < 4, let n = parseNumericPart(body[partStart..<partEnd]) else { return nil }
            count += 1
            if partEnd == body.endIndex {
                // Every part but the last is one byte; the last fills the remaining bytes.
                guard n < (UInt64(1) << (8 * (5 - count))) else { return nil }
                return UInt32(value | n)
            }
            guard n <= 0xFF else { return nil }
            value |= n << (24 - 8 * (count - 1))
            partStart = partEnd + 1
        }
    }

    /// One inet_aton part: `0x1F` hex, `017` octal, `15` decimal; "0x" alone is 0.
    private static func parseNumericPart(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
        guard !bytes.isEmpty else { return nil }
        var radix: UInt64 = 10
        var digits = bytes
        let first = bytes[bytes.startIndex]
        if bytes.count >= 2, first == UInt8(ascii: "0"), bytes[bytes.startIndex + 1] | 0x20 == UInt8(ascii: "x") {
            radix = 16
            digits = bytes.dropFirst(2)
        } else if bytes.count >= 2, first == UInt8(ascii: "0") {
            radix = 8
            digits = bytes.dropFirst()
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
        var text = text
        return text.withUTF8 { parseIPv6(bytes: $0) }
    }

    /// RFC 4291 text over bytes: groups of 1-4 hex digits, one `::`, an optional dotted-quad tail.
    static func parseIPv6(bytes: UnsafeBufferPointer<UInt8>) -> UInt128? {
        var groups = (UInt64(0), UInt64(0)) // 8 groups packed as two 64-bit halves, filled left to right
        var count = 0
        var gap = -1 // group index where "::" stood
        var index = 0
        let end = bytes.count
        func append(_ group: UInt16) -> Bool {
            guard count < 8 else { return false }
            if count < 4 { groups.0 |= UInt64(group) << (48 - 16 * count) }
            else { groups.1 |= UInt64(group) << (48 - 16 * (count - 4)) }
            count += 1
            return true
        }
        guard end >= 2 else { return nil }
        if bytes[0] == UInt8(ascii: ":") {
            guard bytes[1] == UInt8(ascii: ":") else { return nil }
            gap = 0
            index = 2
            if index == end { return 0 }
        }
        while index < end {
            // One group, or a dotted-quad tail.
            let start = index
            var value: UInt32 = 0
            while index < end, index - start < 5, let digit = hexDigit(bytes[index]) {
                value = value << 4 | UInt32(digit)
                index += 1
            }
            if index < end, bytes[index] == UInt8(ascii: ".") {
                // The tail: re-read from the group's start as strict dotted quad; it must end the text.
                let tail = UnsafeBufferPointer(rebasing: bytes[start..<end])
                guard let v4 = parseIPv4Strict(Substring(decoding: tail, as: UTF8.self)),
                      append(UInt16(v4 >> 16)), append(UInt16(v4 & 0xFFFF)) else { return nil }
                index = end
                break
            }
            guard index > start, index - start <= 4, append(UInt16(value)) else { return nil }
            if index == end { break }
            guard bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            if index < end, bytes[index] == UInt8(ascii: ":") {
                guard gap < 0 else { return nil }
                gap = count
                index += 1
                if index == end { break }
            } else if index == end {
                return nil // a single trailing colon
            }
        }
        var result = UInt128(groups.0) << 64 | UInt128(groups.1)
        if gap >= 0 {
            // "::" stands for at least one zero group: shift the groups after it to the right end.
            guard count <= 7 else { return nil }
            let after = count - gap
            let shift = 16 * (8 - count)
            let lowBits = 16 * after
            let lowMask: UInt128 = after == 0 ? 0 : (UInt128.max >> (128 - lowBits)) << (128 - 16 * count)
            let moved = (result & lowMask) >> shift
            result = (result & ~lowMask) | moved
        } else {
            guard count == 8 else { return nil }
        }
        return result
    }

    @inline(__always)
    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
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
        if addressText.containsASCII(UInt8(ascii: ":")) {
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
