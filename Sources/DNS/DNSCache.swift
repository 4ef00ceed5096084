import ATSPolicy
import EventLoops
import Synchronization

/// Answers by name and address family, shared by every loop: addresses until their (clamped) TTL,
/// then stale until the stale limit (served only when a refresh fails); NXDOMAIN and NODATA for the
/// negative lifetime. Bounded: past its capacity the expired entries go, then the oldest quarter.
final class DNSCache: Sendable {
    struct Key: Hashable, Sendable {
        var name: String
        var family: AddressFamily
    }

    enum Found {
        case fresh([IPAddress])
        case negative(LookupFailure)
        /// Past its TTL, within the stale limit: refresh, and fall back on these if that fails.
        case stale([IPAddress], expiredFor: Double)
        case miss
    }

    private enum Entry {
        case positive([IPAddress], expires: Double, staleUntil: Double)
        case negative(LookupFailure, expires: Double)

        var lastUse: Double {
            switch self {
            case .positive(_, _, let staleUntil): staleUntil
            case .negative(_, let expires): expires
            }
        }
    }

    private let entries = Mutex<[Key: Entry]>([:])

    func lookup(_ key: Key, at time: Double = monotonic()) -> Found {
        entries.withLock { entries in
            switch entries[key] {
            case .positive(let addresses, let expires, let staleUntil)?:
                if time < expires { return .fresh(addresses) }
                if time < staleUntil { return .stale(addresses, expiredFor: time - expires) }
                entries[key] = nil
                return .miss
            case .negative(let failure, let expires)?:
                if time < expires { return .negative(failure) }
                entries[key] = nil
                return .miss
            case nil:
                return .miss
            }
        }
    }

    func store(_ key: Key, addresses: [IPAddress], ttl: Double, stale: Double, capacity: Int, at time: Double = monotonic()) {
        put(key, .positive(addresses, expires: time + ttl, staleUntil: time + ttl + stale), capacity: capacity, at: time)
    }

    func store(_ key: Key, negative failure: LookupFailure, ttl: Double, capacity: Int, at time: Double = monotonic()) {
        guard ttl > 0 else { return }
        put(key, .negative(failure, expires: time + ttl), capacity: capacity, at: time)
    }

    var count: Int { entries.withLock { $0.count } }

    private func put(_ key: Key, _ entry: Entry, capacity: Int, at time: Double) {
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= capacity {
                entries = entries.filter { $0.value.lastUse > time }
                if entries.count >= capacity {
                    let oldest = entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(capacity / 4 + 1)
                    for (old, _) in oldest { entries[old] = nil }
                }
            }
            entries[key] = entry
        }
    }
}
