import ATSPolicy

/// `--allow-dest` and `--deny-dest` values (or a route's own), in the order given.
public struct DestinationRules: Sendable, Equatable {
    public var allow: [DestinationPattern]
    public var deny: [DestinationPattern]

    public init(allow: [DestinationPattern] = [], deny: [DestinationPattern] = []) {
        self.allow = allow
        self.deny = deny
    }

    public var isEmpty: Bool { allow.isEmpty && deny.isEmpty }
}

/// Which destinations a client may have the proxy connect to: Smokescreen's rule (check the address
/// actually connected to, not the name) and Squid's `deny to_localhost`. A pure value, built once per
/// configuration generation (and per route that carries its own rules); the caller hands it every
/// address it is about to try.
///
/// In order: an explicit deny (`--deny-dest`, a route's `deny-dest=`) refuses, for every client; an
/// explicit allow opens; a client on the proxy host itself keeps the host's reach; other clients are
/// refused the host's loopback, the unspecified, link-local, multicast and broadcast ranges (and their
/// IPv4-mapped forms, which IPAddress reads as IPv4), cloud metadata, and the proxy's own addresses.
/// Private ranges stay reachable: a lab tests against servers on its own network.
package struct DestinationACL: Sendable {
    /// A pattern and the words that name it in a message (`--deny-dest 10.0.0.0/8`).
    struct Rule: Sendable {
        var pattern: DestinationPattern
        var source: String
    }

    private let allow: [Rule]
    private let deny: [Rule]
    /// The proxy host's own addresses (listeners and admin; a wildcard listener stands for every
    /// interface address), each with the listener it belongs to.
    private let own: [IPAddress: String]

    /// `own`: each listening address (proxy and admin) with the host's interface addresses it stands
    /// for (itself, or all of them for 0.0.0.0 and ::).
    package init(rules: DestinationRules, route: (rules: DestinationRules, name: String)? = nil,
                 ownAddresses: [(address: IPAddress, listener: String)] = []) {
        func labelled(_ patterns: [DestinationPattern], _ source: (DestinationPattern) -> String) -> [Rule] {
            patterns.map { Rule(pattern: $0, source: source($0)) }
        }
        var allow = labelled(rules.allow) { "--allow-dest \($0)" }
        var deny = labelled(rules.deny) { "--deny-dest \($0)" }
        if let route {
            allow += labelled(route.rules.allow) { "allow-dest=\($0) of --route \(route.name)" }
            deny += labelled(route.rules.deny) { "deny-dest=\($0) of --route \(route.name)" }
        }
        self.allow = allow
        self.deny = deny
        var own: [IPAddress: String] = [:]
        for (address, listener) in ownAddresses where own[DestinationACL.normalised(address)] == nil {
            own[DestinationACL.normalised(address)] = listener
        }
        self.own = own
    }

    /// Whether `client` is on the proxy host itself (loopback, or one of the host's own addresses):
    /// it already has the host's reach, so the default denials do not apply to it.
    package func isOnHost(_ client: IPAddress) -> Bool {
        let client = DestinationACL.normalised(client)
        switch client {
        case .v4(let value) where value >> 24 == 127: return true
        case .v6(1): return true
        default: return own[client] != nil
        }
    }

    /// The refusal of connecting `client` to `address` for the host the client named (`name` nil for
    /// an IP literal), or nil when it may.
    package func check(name: String?, address: IPAddress, client: IPAddress) -> DestinationDenial? {
        let address = DestinationACL.normalised(address)
        // Only a refusal names the target: formatting it for every permitted request was 0.6% of
        // the forwarding profile.
        var target: String { name.map { "\($0) (\(address))" } ?? address.description }
        for rule in deny where rule.pattern.matches(address: address) || name.map(rule.pattern.matches(name:)) == true {
            return DestinationDenial(target: target, rule: rule.source, opener: nil)
        }
        if allow.contains(where: { $0.pattern.matches(address: address) || name.map($0.pattern.matches(name:)) == true }) {
            return nil
        }
        if isOnHost(client) { return nil }
        let rule: String
        if let range = DestinationACL.defaultDenied(address) {
            rule = range
        } else if let listener = own[address] {
            rule = "\(address) is this proxy's own address (\(listener))"
        } else {
            return nil
        }
        let opener = "--allow-dest \(address)" + (name.map { ", or --allow-dest \($0) for whatever it resolves to," } ?? "")
        return DestinationDenial(target: target, rule: rule, opener: opener)
    }

    /// Through a parent proxy, which resolves names itself: the host as the client named it, before
    /// any address is known. A literal is checked as the address it is; a name only against the
    /// explicit name rules.
    package func check(host: Host, client: IPAddress) -> DestinationDenial? {
        switch host {
        case .address(let address):
            return check(name: nil, address: address, client: client)
        case .name(let name):
            for rule in deny where rule.pattern.matches(name: name) {
                return DestinationDenial(target: name, rule: rule.source, opener: nil)
            }
            return nil
        }
    }

    /// The default-denied range `address` is in, named for the message; nil for any other address.
    /// A switch on the bits rather than a table of networks: this runs for every address tried.
    package static func defaultDenied(_ address: IPAddress) -> String? {
        switch normalised(address) {
        case .v4(let value):
            if value >> 24 == 127 { return "127.0.0.0/8 (loopback: the proxy host itself)" }
            if value >> 24 == 0 { return "0.0.0.0/8 (this host: 0.0.0.0 reaches the proxy host's own services)" }
            if value >> 16 == 0xA9FE { return "169.254.0.0/16 (link-local: cloud instance metadata lives there)" }
            if value >> 28 == 0xE { return "224.0.0.0/4 (multicast)" }
            if value == 0xFFFF_FFFF { return "255.255.255.255 (broadcast)" }
            return nil
        case .v6(let value):
            if value == 1 { return "::1 (loopback: the proxy host itself)" }
            if value == 0 { return ":: (unspecified: it reaches the proxy host's own services)" }
            if value >> 118 == 0x3FA { return "fe80::/10 (link-local)" }
            if value >> 120 == 0xFF { return "ff00::/8 (multicast)" }
            if value == awsMetadataV6 { return "fd00:ec2::254 (cloud instance metadata)" }
            return nil
        }
    }

    /// The IPv6 address of Amazon EC2's instance metadata service (the IPv4 one is link-local).
    private static let awsMetadataV6: UInt128 = 0xFD00_0EC2_0000_0000_0000_0000_0000_0254

    /// IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as the IPv4 address it reaches. Host.parse and the
    /// resolver already read it so; this keeps a resolver that does not from slipping one through.
    @inline(__always)
    package static func normalised(_ address: IPAddress) -> IPAddress {
        if case .v6(let value) = address, value >> 32 == 0xFFFF { return .v4(UInt32(truncatingIfNeeded: value)) }
        return address
    }
}

/// Why a destination was refused: the rule that denied it, and the flag that would open it (none for
/// an explicit deny, which wins over every allow).
package struct DestinationDenial: Sendable, Equatable {
    /// The host as named and the address tried: `localhost (127.0.0.1)`.
    package var target: String
    package var rule: String
    package var opener: String?

    /// The record's message and the 403's body.
    package var message: String {
        if let opener {
            return "destination \(target) is not allowed for clients off the proxy host: \(rule); \(opener) opens it"
        }
        return "destination \(target) is not allowed: \(rule) denies it (an explicit deny wins over every allow)"
    }
}
