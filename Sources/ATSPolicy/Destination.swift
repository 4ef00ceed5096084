/// How ATS sees a destination host (R6b).
public enum HostClass: String, Sendable, CaseIterable {
    /// An IPv4 or IPv6 literal.
    case ip
    /// A name ending in `.local` or `.local.`.
    case local
    /// A name with no dot at all (`localhost`, `printer`).
    case unqualified
    /// Every other name.
    case `public`
}

/// A normalised host (R6a): a lowercase name or an IP address.
public enum Host: Hashable, Sendable, CustomStringConvertible {
    case name(String)
    case address(IPAddress)

    public var description: String {
        switch self {
        case .name(let name): name
        case .address(let address): address.description
        }
    }

    public var hostClass: HostClass {
        switch self {
        case .address: return .ip
        case .name(let name):
            if name.hasSuffix(".local") || name.hasSuffix(".local.") { return .local }
            return name.contains(".") ? .public : .unqualified
        }
    }

    /// Normalises a host as a client named it: lowercase, IPv6 brackets stripped, numeric IPv4
    /// spellings read the way an OS resolver reads them. Throws for anything that is not a host.
    public static func parse(_ text: some StringProtocol) throws(HostError) -> Host {
        var raw = Substring(text)
        if raw.isEmpty { throw HostError(host: String(text), problem: "empty host") }
        if raw.first == "[" {
            guard raw.last == "]" else { throw HostError(host: String(text), problem: "unclosed IPv6 bracket") }
            raw = raw.dropFirst().dropLast()
            if raw.contains("%") {
                throw HostError(host: String(text), problem: "IPv6 zone identifiers are not allowed")
            }
            guard raw.contains(":"), let v6 = IPAddress.parseIPv6(raw) else {
                throw HostError(host: String(text), problem: "not an IPv6 address inside brackets")
            }
            return .address(IPAddress.normalizingMapped(v6))
        }
        if raw.contains("%") {
            throw HostError(host: String(text), problem: "zone identifiers and percent-encoding are not allowed")
        }
        if raw.contains(":") {
            guard let v6 = IPAddress.parseIPv6(raw) else {
                throw HostError(host: String(text), problem: "not a valid IPv6 address")
            }
            return .address(IPAddress.normalizingMapped(v6))
        }
        guard raw.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw HostError(host: String(text),
                            problem: "non-ASCII host; use its IDNA (xn--) form")
        }
        let lower = raw.lowercased()
        if IPAddress.endsInNumber(Substring(lower)) {
            guard let v4 = IPAddress.parseIPv4Lenient(Substring(lower)) else {
                throw HostError(host: String(text), problem: "ends in a number but is not a valid IPv4 address")
            }
            return .address(.v4(v4))
        }
        try validateName(lower, original: String(text))
        return .name(lower)
    }

    private static func validateName(_ name: String, original: String) throws(HostError) {
        let body = name.hasSuffix(".") ? name.dropLast() : Substring(name)
        guard !body.isEmpty else { throw HostError(host: original, problem: "empty label") }
        guard body.utf8.count <= 253 else { throw HostError(host: original, problem: "longer than 253 characters") }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { throw HostError(host: original, problem: "empty label") }
            if label.utf8.count > 63 {
                throw HostError(host: original, problem: "label '\(label)' is longer than 63 characters")
            }
            for byte in label.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "-"), UInt8(ascii: "_"):
                    continue
                default:
                    throw HostError(host: original,
                                    problem: "character '\(Character(Unicode.Scalar(byte)))' is not allowed in a host name")
                }
            }
        }
    }
}

public struct HostError: Error, CustomStringConvertible, Sendable {
    public var host: String
    public var problem: String
    public var description: String { "invalid host '\(host)': \(problem)" }
}

/// The scheme of a load: `http` for plain requests, `https` for TLS (inside CONNECT).
public enum Scheme: String, Sendable {
    case http
    case https

    public var defaultPort: Int { self == .http ? 80 : 443 }
}

/// What a decision is about: host, port and scheme of one load.
public struct Destination: Hashable, Sendable {
    public var host: Host
    public var port: Int
    public var scheme: Scheme

    public init(host: Host, port: Int, scheme: Scheme) {
        self.host = host
        self.port = port
        self.scheme = scheme
    }

    public var hostClass: HostClass { host.hostClass }

    /// Parses an absolute URL (`http`, `https`, and `ws`/`wss` as their HTTP counterparts).
    public static func parse(url: String) throws(DestinationError) -> Destination {
        guard let schemeEnd = url.range(of: "://") else {
            throw DestinationError(input: url, problem: "not an absolute URL (expected http:// or https://)")
        }
        let schemeText = url[..<schemeEnd.lowerBound].lowercased()
        let scheme: Scheme
        switch schemeText {
        case "http", "ws": scheme = .http
        case "https", "wss": scheme = .https
        default: throw DestinationError(input: url, problem: "unsupported scheme '\(schemeText)'")
        }
        let rest = url[schemeEnd.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return try parse(authority: authority, scheme: scheme, input: url, portRequired: false)
    }

    /// Parses a `host:port` authority as a CONNECT request carries it.
    public static func parse(authority: some StringProtocol, scheme: Scheme,
                             portRequired: Bool) throws(DestinationError) -> Destination {
        try parse(authority: Substring(authority), scheme: scheme, input: String(authority), portRequired: portRequired)
    }

    private static func parse(authority: Substring, scheme: Scheme, input: String,
                              portRequired: Bool) throws(DestinationError) -> Destination {
        var hostText = authority
        var portText: Substring?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else {
                throw DestinationError(input: input, problem: "unclosed IPv6 bracket")
            }
            hostText = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { throw DestinationError(input: input, problem: "junk after IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        var port = scheme.defaultPort
        if let portText {
            guard !portText.isEmpty || !portRequired else {
                throw DestinationError(input: input, problem: "missing port")
            }
            if !portText.isEmpty {
                guard portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let value = Int(portText), (1...65535).contains(value) else {
                    throw DestinationError(input: input, problem: "invalid port '\(portText)'")
                }
                port = value
            }
        } else if portRequired {
            throw DestinationError(input: input, problem: "missing port")
        }
        do {
            return Destination(host: try Host.parse(hostText), port: port, scheme: scheme)
        } catch {
            throw DestinationError(input: input, problem: error.description)
        }
    }
}

public struct DestinationError: Error, CustomStringConvertible, Sendable {
    public var input: String
    public var problem: String
    public var description: String { "\(input): \(problem)" }
}
