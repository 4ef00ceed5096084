/// How an exception entry was found for a host.
public enum ExceptionMatchKind: String, Sendable {
    /// The host itself is the key (R7, R8).
    case exact
    /// A parent domain's entry with NSIncludesSubdomains = YES (R7).
    case subdomain
    /// The longest CIDR key containing the address (R8).
    case cidr
}

/// The entry that decides a destination, and how it was found.
public struct ExceptionMatch: Sendable, Equatable {
    public var entry: ExceptionEntry
    public var kind: ExceptionMatchKind
}

/// The merged table of built-in and app exception entries with the lookups of R7-R9.
///
/// Name keys are compared as exact strings (R5): a key with uppercase letters, a port or a wildcard is
/// stored like any other and simply never equals a normalised host. Exact IP keys match only in canonical
/// text; CIDR keys are parsed (`10/8` padded); both are consulted only under the ios17 profile (R8).
public struct ExceptionTable: Sendable {
    private let names: NameTable<ExceptionEntry>
    private let addresses: PrefixTable<ExceptionEntry>
    private let networks: PrefixTable<ExceptionEntry>
    private let ipKeysApply: Bool

    public init(policy: Policy, profile: Profile, builtins: Bool) {
        ipKeysApply = profile == .ios17
        var merged: [String: ExceptionEntry] = [:]
        if builtins {
            for entry in ExceptionEntry.builtins { merged[entry.key] = entry }
        }
        // An app entry with the same key replaces the built-in entirely (R9).
        for (key, entry) in policy.exceptionDomains { merged[key] = entry }

        var names: [(key: String, value: ExceptionEntry)] = []
        var addresses: [(network: IPNetwork, value: ExceptionEntry)] = []
        var networks: [(network: IPNetwork, value: ExceptionEntry)] = []
        var networkKeys: [IPNetwork: [String]] = [:]
        for (key, entry) in merged {
            if key.containsASCII(UInt8(ascii: "/")) {
                // An unparsable CIDR key never matches (lint reports it).
                if let parsed = IPNetwork.parse(Substring(key)) { networkKeys[parsed.network, default: []].append(key) }
            } else if let address = IPAddress.parseStrict(Substring(key)), address.description == key {
                // Exact IP keys match as canonical text (R5, R8): `2001:DB8::1` or `::ffff:192.0.2.1`
                // never match, as in Apple's evaluator, which looks them up as strings (lint reports them).
                addresses.append((IPNetwork(address: address, prefixLength: address.isIPv4 ? 32 : 128), entry))
            } else {
                names.append((key, entry))
            }
        }
        for (network, keys) in networkKeys {
            networks.append((network, merged[ExceptionTable.preferredKey(keys, canonical: network.description)]!))
        }
        self.names = NameTable(names)
        self.addresses = PrefixTable(addresses)
        self.networks = PrefixTable(networks)
    }

    /// Of several CIDR keys for one network (`10.0.0.0/8`, `10/8`, `10.0.0.1/8`), the one that applies:
    /// the key written in canonical form, else the first in sort order. The OS leaves this undefined;
    /// atsgate makes it deterministic, and lint reports the duplicates.
    public static func preferredKey(_ keys: [String], canonical: String) -> String {
        keys.contains(canonical) ? canonical : keys.min()!
    }

    /// The entry that applies to `host`, if any (R7, R8).
    public func lookup(_ host: Host) -> ExceptionMatch? {
        switch host {
        case .name(let name): return lookupName(name)
        case .address(let address): return ipKeysApply ? lookupAddress(address) : nil
        }
    }

    private func lookupName(_ name: String) -> ExceptionMatch? {
        if names.isEmpty { return nil }
        var name = name
        return name.withUTF8 { host in
            if let entry = names.lookup(host) { return ExceptionMatch(entry: entry, kind: .exact) }
            // Walk the ancestors, most specific first; only entries that include subdomains apply.
            var start = 0
            while let dot = host[start...].firstIndex(of: UInt8(ascii: ".")) {
                start = dot + 1
                // Stop before the empty root label of a trailing-dot name.
                guard start < host.count else { break }
                let parent = UnsafeBufferPointer(rebasing: host[start...])
                if let entry = names.lookup(parent), entry.includesSubdomains {
                    return ExceptionMatch(entry: entry, kind: .subdomain)
                }
            }
            return nil
        }
    }

    private func lookupAddress(_ address: IPAddress) -> ExceptionMatch? {
        if let entry = addresses.longestMatch(address) { return ExceptionMatch(entry: entry, kind: .exact) }
        if let entry = networks.longestMatch(address) { return ExceptionMatch(entry: entry, kind: .cidr) }
        return nil
    }
}
