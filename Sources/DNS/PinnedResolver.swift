import ATSPolicy
import EventLoops

/// One configuration generation's view of names: IP literals and pinned names (`--resolve NAME=IP`)
/// answer at once; every other name goes to the daemon's one `CachingResolver` (its cache outlives
/// reloads), AAAA and A asked in parallel.
package final class PinnedResolver: Sendable {
    private let pinned: [String: [IPAddress]]
    private let dnsResolver: CachingResolver

    package init(pinned: [String: [IPAddress]], dnsResolver: CachingResolver) {
        self.pinned = pinned
        self.dnsResolver = dnsResolver
    }

    /// Calls `handler` on `loop`: once for a literal or a pinned name (family nil, every address),
    /// else once per address family as each answer comes (a cached one at once, on this call).
    package func resolve(_ host: Host, on loop: EventLoop, _ handler: @escaping (Resolution) -> Void) {
        switch host {
        case .address(let address):
            handler(Resolution(family: nil, result: .success([address]), source: .literal))
        case .name(let name):
            if let addresses = pinned[name] {
                return handler(Resolution(family: nil, result: .success(addresses), source: .pinned))
            }
            for family in AddressFamily.allCases {
                dnsResolver.resolve(name, family, on: loop, handler)
            }
        }
    }

    /// How many answers `resolve` gives for `host`.
    package func answerCount(for host: Host) -> Int {
        if case .name(let name) = host, pinned[name] == nil { return AddressFamily.allCases.count }
        return 1
    }
}
