import ATSPolicy

/// One value of `--allow-dest` or `--deny-dest` (and of a route's `allow-dest=`/`deny-dest=`): a CIDR
/// (or one address), a name, or a `.suffix`. A name and a suffix match the host as the client named
/// it; a CIDR matches the address the proxy connects to (and an IP literal the client named).
public enum DestinationPattern: Sendable, Hashable, CustomStringConvertible {
    case network(IPNetwork)
    /// Exactly this name (lowercase, as Host.parse normalises it).
    case name(String)
    /// This name and every name under it, as Squid's `.example.com` (stored without the dot).
    case suffix(String)

    /// Parses `10.0.0.0/8`, `[::1]` or `::1/128`, `192.0.2.7`, `printer.lab`, `.corp.example`. Names
    /// are read as Host.parse reads a destination, so an odd IPv4 spelling is an address here too.
    public init?(parsing text: Substring) {
        if let parsed = IPNetwork.parse(text) {
            self = .network(parsed.network)
            return
        }
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? text.dropFirst().dropLast() : text
        if let address = IPAddress.parseStrict(bare) {
            self = .network(IPNetwork(address: address, prefixLength: address.isIPv4 ? 32 : 128))
            return
        }
        let isSuffix = text.hasPrefix(".")
        let nameText = isSuffix ? text.dropFirst() : text
        guard !nameText.isEmpty, !nameText.hasPrefix("."), let host = try? Host.parse(nameText) else { return nil }
        switch host {
        case .address(let address):
            // `0x7f.1` is 127.0.0.1 to every resolver: the pattern is that address, not a name.
            guard !isSuffix else { return nil }
            self = .network(IPNetwork(address: address, prefixLength: address.isIPv4 ? 32 : 128))
        case .name(let name):
            let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
            self = isSuffix ? .suffix(trimmed) : .name(trimmed)
        }
    }

    public var description: String {
        switch self {
        case .network(let network):
            let full = network.prefixLength == (network.address.isIPv4 ? 32 : 128)
            return full ? network.address.description : network.description
        case .name(let name): return name
        case .suffix(let suffix): return "." + suffix
        }
    }

    /// Whether the pattern covers `name` (a host name as the client named it; a trailing dot ignored).
    package func matches(name: String) -> Bool {
        switch self {
        case .network: return false
        case .name(let pattern): return Self.trimmed(name) == pattern
        case .suffix(let suffix):
            let name = Self.trimmed(name)
            guard name.hasSuffix(suffix) else { return false }
            return name.utf8.count == suffix.utf8.count
                || name.utf8[name.utf8.index(name.utf8.endIndex, offsetBy: -suffix.utf8.count - 1)] == UInt8(ascii: ".")
        }
    }

    /// Whether the pattern covers the host as the client named it: a name by its text, a literal by
    /// its address.
    package func matches(_ host: Host) -> Bool {
        switch host {
        case .name(let name): matches(name: name)
        case .address(let address): matches(address: address)
        }
    }

    /// Whether the pattern covers `address` (IPv4-mapped IPv6 already read as its IPv4 address).
    package func matches(address: IPAddress) -> Bool {
        guard case .network(let network) = self else { return false }
        return network.contains(address)
    }

    private static func trimmed(_ name: String) -> Substring {
        name.hasSuffix(".") ? name.dropLast() : Substring(name)
    }
}
