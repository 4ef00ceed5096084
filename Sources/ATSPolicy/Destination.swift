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
            return name.containsASCII(UInt8(ascii: ".")) ? .public : .unqualified
        }
    }

    /// Normalises a host as a client named it: lowercase, IPv6 brackets stripped, numeric IPv4
    /// spellings read the way an OS resolver reads them. Throws for anything that is not a host.
    public static func parse(_ text: some StringProtocol) throws(HostError) -> Host {
        var raw = Substring(text)
        // One contiguous buffer: Substring.UTF8View validates an index per byte, which dominated.
        let result = raw.withUTF8 { parse(bytes: $0) }
        switch result {
        case .success(let host): return host
        case .failure(let problem): throw HostError(host: String(text), problem: problem.text)
        }
    }

    fileprivate struct Problem: Error { var text: String }

    fileprivate static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Result<Host, Problem> {
        let count = bytes.count
        guard count > 0 else { return .failure(Problem(text: "empty host")) }
        if bytes[0] == UInt8(ascii: "[") {
            guard bytes[count - 1] == UInt8(ascii: "]") else { return .failure(Problem(text: "unclosed IPv6 bracket")) }
            let inner = UnsafeBufferPointer(rebasing: bytes[1..<(count - 1)])
            if inner.contains(UInt8(ascii: "%")) {
                return .failure(Problem(text: "IPv6 zone identifiers are not allowed"))
            }
            guard inner.contains(UInt8(ascii: ":")), let v6 = IPAddress.parseIPv6(bytes: inner) else {
                return .failure(Problem(text: "not an IPv6 address inside brackets"))
            }
            return .success(.address(IPAddress.normalizingMapped(v6)))
        }
        guard count <= 254 else { return .failure(Problem(text: "longer than 253 characters")) }
        // One pass: validate the labels, note uppercase, and find where the last label is.
        var labelStart = 0, lastLabelStart = 0, lastLabelEnd = 0
        var hasUppercase = false
        for index in 0..<count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                hasUppercase = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                break
            case UInt8(ascii: "."):
                if index == labelStart { return .failure(Problem(text: "empty label")) }
                if index - labelStart > 63 { return .failure(Problem(text: "a label is longer than 63 characters")) }
                lastLabelStart = labelStart
                lastLabelEnd = index
                labelStart = index + 1
            case UInt8(ascii: ":"):
                // An unbracketed IPv6 literal (a CONNECT authority never has one, a Host header may).
                guard !bytes.contains(UInt8(ascii: "%")) else {
                    return .failure(Problem(text: "zone identifiers are not allowed"))
                }
                guard let v6 = IPAddress.parseIPv6(bytes: bytes) else {
                    return .failure(Problem(text: "not a valid IPv6 address"))
                }
                return .success(.address(IPAddress.normalizingMapped(v6)))
            case UInt8(ascii: "%"):
                return .failure(Problem(text: "zone identifiers and percent-encoding are not allowed"))
            case 0x80...:
                return .failure(Problem(text: "non-ASCII host; use its IDNA (xn--) form"))
            default:
                return .failure(Problem(text: "character '\(Character(Unicode.Scalar(byte)))' is not allowed in a host name"))
            }
        }
        if labelStart < count {
            // The name does not end with a dot: the last label runs to the end.
            if count - labelStart > 63 { return .failure(Problem(text: "a label is longer than 63 characters")) }
            lastLabelStart = labelStart
            lastLabelEnd = count
        }
        // 253 characters at most, not counting a trailing dot.
        if count - (labelStart == count ? 1 : 0) > 253 { return .failure(Problem(text: "longer than 253 characters")) }
        // WHATWG's "ends in a number": an IPv4 spelling or invalid, never a name.
        if isNumericLabel(UnsafeBufferPointer(rebasing: bytes[lastLabelStart..<lastLabelEnd])) {
            guard let v4 = IPAddress.parseIPv4Lenient(bytes) else {
                return .failure(Problem(text: "ends in a number but is not a valid IPv4 address"))
            }
            return .success(.address(.v4(v4)))
        }
        return .success(.name(String(unsafeUninitializedCapacity: count) { buffer in
            for index in 0..<count {
                let byte = bytes[index]
                buffer[index] = hasUppercase && byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return count
        }))
    }

    /// A label that is all decimal digits, or 0x followed by hex digits.
    private static func isNumericLabel(_ label: UnsafeBufferPointer<UInt8>) -> Bool {
        if label.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        guard label.count >= 2, label[0] == UInt8(ascii: "0"), label[1] | 0x20 == UInt8(ascii: "x") else { return false }
        return label.dropFirst(2).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
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
        var url = url
        return try url.withUTF8 { parse(url: $0) }.get()
    }

    /// Parses an absolute URL as bytes, a request target as it came off the wire: no String is made
    /// unless it is refused.
    public static func parse(url: UnsafeBufferPointer<UInt8>) -> Result<Destination, DestinationError> {
        guard let colon = url.firstIndex(of: UInt8(ascii: ":")), url[colon...].starts(with: "://".utf8) else {
            return .failure(DestinationError(input: url, problem: "not an absolute URL (expected http:// or https://)"))
        }
        let schemeText = UnsafeBufferPointer(rebasing: url[..<colon])
        let scheme: Scheme
        if schemeText.equalsCaseInsensitive("http") || schemeText.equalsCaseInsensitive("ws") {
            scheme = .http
        } else if schemeText.equalsCaseInsensitive("https") || schemeText.equalsCaseInsensitive("wss") {
            scheme = .https
        } else {
            let name = String(decoding: schemeText, as: UTF8.self).lowercased()
            return .failure(DestinationError(input: url, problem: "unsupported scheme '\(name)'"))
        }
        let rest = url[(colon + 3)...]
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        var authority = rest[..<end]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        return parse(authority: UnsafeBufferPointer(rebasing: authority), scheme: scheme, input: url, portRequired: false)
    }

    /// Parses a `host:port` authority as a CONNECT request carries it.
    public static func parse(authority: some StringProtocol, scheme: Scheme,
                             portRequired: Bool) throws(DestinationError) -> Destination {
        var text = Substring(authority)
        return try text.withUTF8 { bytes in
            parse(authority: bytes, scheme: scheme, input: bytes, portRequired: portRequired)
        }.get()
    }

    /// `input` is the whole text the authority came from, for the error.
    private static func parse(authority: UnsafeBufferPointer<UInt8>, scheme: Scheme, input: UnsafeBufferPointer<UInt8>,
                              portRequired: Bool) -> Result<Destination, DestinationError> {
        var hostText = authority[...]
        var portText: Slice<UnsafeBufferPointer<UInt8>>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                return .failure(DestinationError(input: input, problem: "unclosed IPv6 bracket"))
            }
            hostText = authority[...close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else {
                    return .failure(DestinationError(input: input, problem: "junk after IPv6 address"))
                }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostText = authority[..<colon]
            portText = authority[(colon + 1)...]
        }
        var port = scheme.defaultPort
        if let portText {
            guard !portText.isEmpty || !portRequired else {
                return .failure(DestinationError(input: input, problem: "missing port"))
            }
            if !portText.isEmpty {
                let digits = portText.count <= 5 && portText.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                let value = digits ? portText.reduce(0) { $0 * 10 + Int($1 - 0x30) } : 0
                guard (1...65535).contains(value) else {
                    let text = String(decoding: portText, as: UTF8.self)
                    return .failure(DestinationError(input: input, problem: "invalid port '\(text)'"))
                }
                port = value
            }
        } else if portRequired {
            return .failure(DestinationError(input: input, problem: "missing port"))
        }
        switch Host.parse(bytes: UnsafeBufferPointer(rebasing: hostText)) {
        case .success(let host):
            return .success(Destination(host: host, port: port, scheme: scheme))
        case .failure(let problem):
            let error = HostError(host: String(decoding: hostText, as: UTF8.self), problem: problem.text)
            return .failure(DestinationError(input: input, problem: error.description))
        }
    }
}

public struct DestinationError: Error, CustomStringConvertible, Sendable {
    public var input: String
    public var problem: String
    public var description: String { "\(input): \(problem)" }
}

extension DestinationError {
    fileprivate init(input: UnsafeBufferPointer<UInt8>, problem: String) {
        self.init(input: String(decoding: input, as: UTF8.self), problem: problem)
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// ASCII case-insensitive equality with a lowercase literal.
    fileprivate func equalsCaseInsensitive(_ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            zip(self, expected).allSatisfy { ($0 | 0x20) == $1 }
        }
    }
}
