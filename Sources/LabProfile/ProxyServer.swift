import ATSPolicy

/// The proxy's address as a device dials it: `ProxyServer` (a name or an IP literal, without
/// brackets) and `ProxyServerPort`.
package struct ProxyServer: Hashable, Sendable, CustomStringConvertible {
    package let host: String
    package let port: Int

    /// `HOST:PORT` or `[IPv6]:PORT`. The host is normalised as the proxy reads hosts (lowercase; an IP
    /// address in canonical form, so `0x7f.1` is written as 127.0.0.1).
    package init(parsing text: String) throws(ProfileInputError) {
        // `2001:db8::1:3128` could be an address with a port or an address alone: brackets decide.
        guard text.hasPrefix("[") || text.filter({ $0 == ":" }).count <= 1 else {
            throw ProfileInputError("an IPv6 address needs brackets: [ADDRESS]:PORT, e.g. [2001:db8::1]:3128")
        }
        let destination: Destination
        do {
            destination = try Destination.parse(authority: text, scheme: .http, portRequired: true)
        } catch {
            throw ProfileInputError("\(error.problem); expected HOST:PORT, e.g. atsgate.lab.example:3128 or [2001:db8::1]:3128")
        }
        if case .address(let address) = destination.host, address == .v4(0) || address == .v6(0) {
            throw ProfileInputError("\(address) is the address a proxy listens on for every interface, not one a device "
                + "can reach: give the proxy host's name or LAN address")
        }
        host = destination.host.description
        port = destination.port
    }

    /// As a person writes it: `host:port`, `[v6]:port`.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
