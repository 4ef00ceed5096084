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
/// stored like any other and simply never equals a normalised host. IP and CIDR keys are parsed once
/// (inet_pton rules) and only consulted under the ios17 profile (R8).
public struct ExceptionTable: Sendable {
    private var names: [Substring: ExceptionEntry] = [:]
    private var addresses: [IPAddress: ExceptionEntry] = [:]
    /// CIDR entries by prefix length, longest first; each maps a masked address to its entry.
    private var networks: [(length: Int, isIPv4: Bool, entries: [IPAddress: ExceptionEntry])] = []
    private let ipKeysApply: Bool

    public init(policy: Policy, profile: Profile, builtins: Bool) {
        ipKeysApply = profile == .ios17
        var merged: [String: ExceptionEntry] = [:]
        if builtins {
            for entry in ExceptionEntry.builtins { merged[entry.key] = entry }
        }
        // An app entry with the same key replaces the built-in entirely (R9).
        for (key, entry) in policy.exceptionDomains { merged[key] = entry }

        var byLength: [Int: [IPAddress: ExceptionEntry]] = [:]
        for (key, entry) in merged {
            if key.contains("/") {
                if let parsed = IPNetwork.parse(Substring(key)) {
                    let network = parsed.network
                    let slot = network.prefixLength + (network.address.isIPv4 ? 0 : 1000)
                    byLength[slot, default: [:]][network.address] = entry
                }
                // An unparsable CIDR key never matches (lint reports it).
            } else if let address = IPAddress.parseStrict(Substring(key)) {
                addresses[address] = entry
            } else {
                names[Substring(key)] = entry
            }
        }
        networks = byLength.map { slot, entries in
            (length: slot % 1000, isIPv4: slot < 1000, entries: entries)
        }.sorted { $0.length > $1.length }
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
        var candidate = Substring(name)
        if let entry = names[candidate] { return ExceptionMatch(entry: entry, kind: .exact) }
        // Walk the ancestors, most specific first; only entries that include subdomains apply.
        while let dot = candidate.firstIndex(of: ".") {
            candidate = candidate[candidate.index(after: dot)...]
            if candidate.isEmpty || candidate == "." { break }
            if let entry = names[candidate], entry.includesSubdomains {
                return ExceptionMatch(entry: entry, kind: .subdomain)
            }
        }
        return nil
    }

    private func lookupAddress(_ address: IPAddress) -> ExceptionMatch? {
        if let entry = addresses[address] { return ExceptionMatch(entry: entry, kind: .exact) }
        let isIPv4 = address.isIPv4
        for network in networks where network.isIPv4 == isIPv4 {
            if let entry = network.entries[IPNetwork.mask(address, network.length)] {
                return ExceptionMatch(entry: entry, kind: .cidr)
            }
        }
        return nil
    }
}
