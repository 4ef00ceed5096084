import ATSPolicy
import EventLoops
import Synchronization

/// Which parents a request goes through, in the order they are tried: a route's own way out first,
/// then `--parent-bypass`, then the `--parent` list with the parents that failed lately moved last
/// (tried only when every other one fails too).
package struct ParentRouting: Sendable {
    package let parents: [ParentProxy]
    /// `--parent-bypass NAME|.SUFFIX|CIDR`: destinations that never go through a parent, like NO_PROXY
    /// (the `--allow-dest` syntax; a name is matched by its text, never resolved for this).
    package let bypass: [DestinationPattern]
    package let health: ParentHealth

    package init(parents: [ParentProxy], bypass: [DestinationPattern], health: ParentHealth) {
        self.parents = parents
        self.bypass = bypass
        self.health = health
    }

    /// Empty: straight to the origin.
    package func parents(for destination: Destination, route: Egress?) -> [ParentProxy] {
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

    package init() {}

    /// Milliseconds a failed parent is passed over (`ProxyConfiguration.parentRetry`).
    package func setRetry(seconds: Double) { retry.store(Int(seconds * 1000), ordering: .relaxed) }

    package func markDown(_ parent: ParentProxy) {
        let until = monotonic() + Double(retry.load(ordering: .relaxed)) / 1000
        downUntil.withLock { $0[parent] = until }
    }

    package func markUp(_ parent: ParentProxy) {
        downUntil.withLock { entries in
            if entries[parent] != nil { entries[parent] = nil }
        }
    }

    package func down(among parents: [ParentProxy]) -> Set<ParentProxy> {
        let time = monotonic()
        return downUntil.withLock { entries in
            Set(parents.filter { (entries[$0] ?? 0) > time })
        }
    }

    package func isDown(_ parent: ParentProxy) -> Bool { !down(among: [parent]).isEmpty }
}

