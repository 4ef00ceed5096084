import ArgumentParser
import ProxyAccess
import ProxyCore

/// The way out to origins: parent proxies and what bypasses them, the ports CONNECT may reach and
/// where an upgraded request goes, and how long connecting and a silent tunnel may take.
struct UpstreamOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("""
        Parent proxy every origin is reached through (repeatable, tried in order; one that fails is passed \
        over for 30 s). Tunnels go through it with CONNECT, allowed cleartext as absolute-form requests; its \
        credentials go to it alone.
        """, valueName: "http://[user:password@]host:port"))
    var parent: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Destination that never goes through a parent (repeatable, like NO_PROXY): a name, .domain (the \
        domain and every name under it), or a CIDR (IP literals).
        """, valueName: "name|.suffix|cidr"))
    var parentBypass: [String] = []

    @Option(name: .long, help: ArgumentHelp("Port CONNECT may reach (repeatable; default 443).", valueName: "port"))
    var connectPort: [Int] = []

    @Option(name: .long, help: ArgumentHelp("""
        Port an upgraded request goes to (repeatable; default 80=443, other ports are kept).
        """, valueName: "from=to"))
    var upgradePort: [String] = []

    @Option(name: .long, help: ArgumentHelp("Seconds to connect to the origin.", valueName: "seconds"))
    var connectTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Seconds a tunnel may stay silent.", valueName: "seconds"))
    var idleTimeout = 300.0

    func validate() throws {
        _ = try Self.portMap(upgradePort)
        for port in connectPort where !(1...65535).contains(port) {
            throw ValidationError("--connect-port \(port) is not a port")
        }
        for timeout in [connectTimeout, idleTimeout] where !(timeout > 0) {
            throw ValidationError("timeouts must be positive")
        }
        // Checked here, so that a config file's bad value is reported against the file and its line.
        for url in parent { _ = try Self.parentProxy(url, flag: "--parent") }
        _ = try parentBypasses()
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        if !connectPort.isEmpty { configuration.connectPorts = Set(connectPort) }
        configuration.timeouts.connect = connectTimeout
        configuration.timeouts.idle = idleTimeout
        configuration.parents.proxies = try parent.map { try Self.parentProxy($0, flag: "--parent") }
        configuration.parents.bypass = try parentBypasses()
        configuration.upgradePorts = [80: 443].merging(try Self.portMap(upgradePort)) { $1 }
    }

    /// `--parent URL`, with the flag named in the error.
    static func parentProxy(_ url: String, flag: String) throws -> ParentProxy {
        do {
            return try ParentProxy(url: url)
        } catch {
            throw ValidationError("\(flag) \(url): \(error.description)")
        }
    }

    func parentBypasses() throws -> [DestinationPattern] {
        try parentBypass.map { text in
            guard let bypass = DestinationPattern(parsing: Substring(text)) else {
                throw ValidationError("--parent-bypass \(text): expected a name, .domain (it and every name under it) or a CIDR")
            }
            return bypass
        }
    }

    /// `--upgrade-port`'s `FROM=TO` port pairs.
    static func portMap(_ entries: [String]) throws -> [Int: Int] {
        var map: [Int: Int] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=")
            guard parts.count == 2, let from = Int(parts[0]), let to = Int(parts[1]),
                  (1...65535).contains(from), (1...65535).contains(to) else {
                throw ValidationError("--upgrade-port \(entry): expected FROM=TO, e.g. 8080=8443")
            }
            map[from] = to
        }
        return map
    }
}
