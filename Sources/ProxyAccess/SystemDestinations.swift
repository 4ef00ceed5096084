import ATSPolicy
import Foundation

/// One destination the device reaches on its own: a name, a `.suffix` or an address range, the TCP
/// ports it is reached on (empty: any), and the service it belongs to.
public struct SystemDestination: Sendable, Hashable, CustomStringConvertible {
    public var pattern: DestinationPattern
    public var ports: [UInt16]
    public var service: String

    public init(pattern: DestinationPattern, ports: [UInt16] = [], service: String) {
        self.pattern = pattern
        self.ports = ports
        self.service = service
    }

    /// As `--system-dest` spells it: `NAME`, `.SUFFIX` or `CIDR`, then `:PORT` when there is one.
    public var description: String {
        let text = pattern.description
        guard ports.count == 1 else { return text }
        let bracketed = text.contains(":") ? "[\(text)]" : text
        return "\(bracketed):\(ports[0])"
    }

    func covers(port: UInt16) -> Bool { ports.isEmpty || ports.contains(port) }
}

/// The hosts, domains and ports that Apple's products reach on their own (push notifications, iCloud,
/// software update, certificate validation, captive-portal detection...), after Apple's article on
/// enterprise networks, plus the operator's own (`--system-dest`). On the transparent gate a device
/// sends all of it; judged as the app's, it would fill the app's report with what the app never did.
///
/// A name is matched by the host the client named (SNI, Host, CONNECT's authority), a range by the
/// address the connection goes to. Lookups are a hash of the name and of each parent domain, so a
/// table of hundreds costs the same as one of ten.
public struct SystemDestinations: Sendable {
    /// Where the shipped table comes from and when it was read, from its data file.
    public private(set) var source: String
    public private(set) var date: String
    public private(set) var entries: [SystemDestination] = []
    private var names: [String: [SystemDestination]] = [:]
    private var suffixes: [String: [SystemDestination]] = [:]
    private var networks: [SystemDestination] = []

    public init(source: String, date: String, entries: [SystemDestination] = []) {
        self.source = source
        self.date = date
        for entry in entries { add(entry) }
    }

    /// The shipped table (Sources/ProxyAccess/Resources/system-destinations.json).
    public static let apple: SystemDestinations = {
        do {
            return try parse(data: Data(PackageResources.system_destinations_json))
        } catch {
            // The file is part of the build and a test reads it: a broken one is a build defect.
            preconditionFailure("system-destinations.json: \(error)")
        }
    }()

    /// No destination is the system's: `--system-traffic judge` with no table, or a test's.
    public static let none = SystemDestinations(source: "none", date: "")

    public var isEmpty: Bool { entries.isEmpty }

    public mutating func add(_ entry: SystemDestination) {
        entries.append(entry)
        switch entry.pattern {
        case .name(let name): names[name, default: []].append(entry)
        case .suffix(let suffix): suffixes[suffix, default: []].append(entry)
        case .network: networks.append(entry)
        }
    }

    /// The entry that covers a connection to `host` (as the client named it) at `address` (where it
    /// goes, when known) on `port`; nil when it is nobody's but the app's.
    public func match(host: ATSPolicy.Host?, address: IPAddress?, port: UInt16) -> SystemDestination? {
        guard !entries.isEmpty else { return nil }
        if case .name(let raw)? = host {
            let name = raw.hasSuffix(".") ? String(raw.dropLast()) : raw
            if let entry = names[name]?.first(where: { $0.covers(port: port) }) { return entry }
            if !suffixes.isEmpty {
                var rest = Substring(name)
                while true {
                    if let entry = suffixes[String(rest)]?.first(where: { $0.covers(port: port) }) { return entry }
                    guard let dot = rest.firstIndex(of: ".") else { break }
                    rest = rest[rest.index(after: dot)...]
                }
            }
        }
        let target: IPAddress?
        if case .address(let literal)? = host { target = literal } else { target = address }
        if let target {
            return networks.first { $0.covers(port: port) && $0.pattern.matches(address: target) }
        }
        return nil
    }

    /// Reads a table in the shipped file's format: `source`, `date` and `destinations`, each with
    /// `match`, `ports` and `service`. Errors name the entry and the key.
    public static func parse(data: Data) throws(SystemDestinationError) -> SystemDestinations {
        struct File: Decodable {
            struct Entry: Decodable { var match: String; var ports: [UInt16]?; var service: String }
            var source: String
            var date: String
            var destinations: [Entry]
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw SystemDestinationError(text: "", why: "not a system-destinations table: \(error)")
        }
        var table = SystemDestinations(source: file.source, date: file.date)
        for (index, entry) in file.destinations.enumerated() {
            guard let pattern = DestinationPattern(parsing: Substring(entry.match)) else {
                throw SystemDestinationError(text: entry.match, why: "destinations[\(index)].match is not a name, .suffix or CIDR")
            }
            table.add(SystemDestination(pattern: pattern, ports: entry.ports ?? [], service: entry.service))
        }
        return table
    }

    /// One `--system-dest` value: `NAME`, `.SUFFIX` or `CIDR`, optionally followed by `:PORT`
    /// (an IPv6 address or range in brackets when it has a port: `[2001:db8::/32]:5223`).
    public static func parseOperatorEntry(_ text: String) throws(SystemDestinationError) -> SystemDestination {
        var body = Substring(text)
        var port: UInt16?
        if let colon = body.lastIndex(of: ":") {
            let before = body[..<colon]
            // A port follows a name or an IPv4 range (no colon before it) or a bracketed IPv6 one.
            if !before.contains(":") || (before.hasPrefix("[") && before.hasSuffix("]")) {
                guard let value = UInt16(body[body.index(after: colon)...]), value > 0 else {
                    throw SystemDestinationError(text: text, why: "the port after ':' must be 1-65535")
                }
                port = value
                body = before.hasPrefix("[") ? before.dropFirst().dropLast() : before
            }
        }
        if body.hasPrefix("["), body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        guard let pattern = DestinationPattern(parsing: body) else {
            throw SystemDestinationError(text: text, why: "expected NAME, .SUFFIX or CIDR, then :PORT if any")
        }
        return SystemDestination(pattern: pattern, ports: port.map { [$0] } ?? [], service: "operator (--system-dest)")
    }
}

public struct SystemDestinationError: Error, CustomStringConvertible, Equatable {
    public var text: String
    public var why: String
    public var description: String { text.isEmpty ? why : "'\(text)': \(why)" }

    public init(text: String, why: String) {
        self.text = text
        self.why = why
    }
}
