import ArgumentParser
import ATSPolicy
import ProxyCore

/// How origins' names become addresses: names pinned like curl's --resolve, the DNS servers asked,
/// and how long answers (and failures) are waited for and kept.
struct DNSOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Pin a name to an address, like curl's --resolve (repeatable).",
                                            valueName: "name=ip"))
    var resolve: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        DNS server to ask instead of /etc/resolv.conf's (repeatable; UDP, and TCP for truncated answers).
        """, valueName: "ip:port"))
    var dnsServer: [String] = []

    @Option(name: .long, help: ArgumentHelp("""
        Seconds to resolve an origin's name (separate from --connect-timeout); past it: 504 dns-timeout.
        """, valueName: "seconds"))
    var dnsTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp("Least seconds an answer is cached, whatever its TTL.", valueName: "seconds"))
    var dnsMinTtl = 1.0

    @Option(name: .long, help: ArgumentHelp("Most seconds an answer is cached, whatever its TTL.", valueName: "seconds"))
    var dnsMaxTtl = 3600.0

    @Option(name: .long, help: ArgumentHelp("Seconds NXDOMAIN and NODATA answers are remembered (0: not at all).",
                                            valueName: "seconds"))
    var dnsNegativeTtl = 10.0

    @Option(name: .long, help: ArgumentHelp("""
        Seconds past its TTL an answer may still be served when the resolver fails (RFC 8767; 0: never). \
        The record says dns_stale.
        """, valueName: "seconds"))
    var dnsStale = 86_400.0

    func validate() throws {
        guard dnsTimeout > 0 else { throw ValidationError("timeouts must be positive") }
        for (flag, value) in [("--dns-min-ttl", dnsMinTtl), ("--dns-max-ttl", dnsMaxTtl),
                              ("--dns-negative-ttl", dnsNegativeTtl), ("--dns-stale", dnsStale)] where !(value >= 0) {
            throw ValidationError("\(flag) must not be negative")
        }
        guard dnsMinTtl <= dnsMaxTtl else { throw ValidationError("--dns-min-ttl is above --dns-max-ttl") }
        // Checked here, so that a config file's bad value is reported against the file and its line.
        _ = try dnsServers()
    }

    func apply(to configuration: inout ProxyConfiguration) throws {
        configuration.resolve = try Self.pins(resolve)
        configuration.dns.timeout = dnsTimeout
        configuration.dns.minimumTTL = dnsMinTtl
        configuration.dns.maximumTTL = dnsMaxTtl
        configuration.dns.negativeTTL = dnsNegativeTtl
        configuration.dns.staleLimit = dnsStale
        configuration.dns.servers = try dnsServers()
    }

    func dnsServers() throws -> [SocketAddress] {
        try dnsServer.map { text in
            guard let address = SocketAddress(parsing: text) else {
                throw ValidationError("--dns-server \(text): expected IP:PORT, e.g. 10.0.0.53:53 or [fd00::53]:53")
            }
            return address
        }
    }

    /// `NAME=IP` pairs; a name may be pinned to several addresses. `diagnose --resolve` reads them too.
    static func pins(_ entries: [String]) throws -> [String: [IPAddress]] {
        var pins: [String: [IPAddress]] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, case .name(let name)? = try? Host.parse(parts[0]),
                  let address = IPAddress.parseStrict(parts[1].hasPrefix("[") ? parts[1].dropFirst().dropLast() : parts[1])
            else {
                throw CommandFailure(message: "--resolve \(entry): expected NAME=IP, e.g. api.example.com=127.0.0.1")
            }
            pins[name, default: []].append(address)
        }
        return pins
    }
}
