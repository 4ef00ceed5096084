import ATSPolicy
import EventLoop
import ProxyAccess
import Synchronization

/// `--parent-bypass NAME|.SUFFIX|CIDR`: destinations that never go through a parent, like NO_PROXY.
public enum ParentBypass: Sendable, Hashable, CustomStringConvertible {
    /// Exactly this name.
    case name(String)
    /// `.corp.example`: the domain and every name under it.
    case suffix(String)
    /// IP literals in this network (a name is matched by its text, never resolved for this).
    case network(IPNetwork)

    /// Parses `NAME`, `.SUFFIX`, `CIDR` or a single address; nil for anything else.
    public init?(parsing text: String) {
        if let parsed = IPNetwork.parse(Substring(text)) {
            self = .network(parsed.network)
        } else if let address = IPAddress.parseStrict(Substring(text.hasPrefix("[") ? String(text.dropFirst().dropLast()) : text)) {
            self = .network(IPNetwork(address: address, prefixLength: address.isIPv4 ? 32 : 128))
        } else if text.hasPrefix("."), text.count > 1, case .name(let name)? = try? Host.parse(text.dropFirst()) {
            self = .suffix(name)
        } else if case .name(let name)? = try? Host.parse(text) {
            self = .name(name)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .name(let name): name
        case .suffix(let domain): "." + domain
        case .network(let network): network.description
        }
    }

    func matches(_ host: Host) -> Bool {
        switch (self, host) {
        case (.name(let name), .name(let candidate)): candidate == name
        case (.suffix(let domain), .name(let candidate)): candidate == domain || candidate.hasSuffix("." + domain)
        case (.network(let network), .address(let address)): network.contains(address)
        default: false
        }
    }
}

/// Which parents a request goes through, in the order they are tried: a route's own way out first,
/// then `--parent-bypass`, then the `--parent` list with the parents that failed lately moved last
/// (tried only when every other one fails too).
package struct ParentRouting: Sendable {
    let parents: [ParentProxy]
    let bypass: [ParentBypass]
    let health: ParentHealth

    /// Empty: straight to the origin.
    func parents(for destination: Destination, route: Egress?) -> [ParentProxy] {
        if bypass.contains(where: { $0.matches(destination.host) }) { return [] }
        switch route {
        case .direct?: return []
        case .parent(let parent)?: return [parent]
        case nil: break
        }
        guard parents.count > 1 else { return parents }
        let down = health.down(among: parents)
        if down.isEmpty { return parents }
        return parents.filter { !down.contains($0) } + parents.filter { down.contains($0) }
    }
}

/// Parents that failed lately (refused or timed out a connection, or answered garbage), passed over
/// for `retry` seconds. Shared by every loop and every configuration generation.
package final class ParentHealth: Sendable {
    private let downUntil = Mutex<[ParentProxy: Double]>([:])
    private let retry = Atomic<Int>(30_000)

    /// Milliseconds a failed parent is passed over (`ProxyConfiguration.parentRetry`).
    func setRetry(seconds: Double) { retry.store(Int(seconds * 1000), ordering: .relaxed) }

    func markDown(_ parent: ParentProxy) {
        let until = monotonic() + Double(retry.load(ordering: .relaxed)) / 1000
        downUntil.withLock { $0[parent] = until }
    }

    func markUp(_ parent: ParentProxy) {
        downUntil.withLock { entries in
            if entries[parent] != nil { entries[parent] = nil }
        }
    }

    func down(among parents: [ParentProxy]) -> Set<ParentProxy> {
        let time = monotonic()
        return downUntil.withLock { entries in
            Set(parents.filter { (entries[$0] ?? 0) > time })
        }
    }

    func isDown(_ parent: ParentProxy) -> Bool { !down(among: [parent]).isEmpty }
}

extension ProxyConfiguration {
    /// Every parent the configuration names: `--parent`, then the routes' own, each once.
    var namedParents: [ParentProxy] {
        var seen: Set<ParentProxy> = []
        let routed = routes.compactMap { route -> ParentProxy? in
            if case .parent(let parent)? = route.egress { return parent }
            return nil
        }
        return (parents + routed).filter { seen.insert($0).inserted }
    }
}
