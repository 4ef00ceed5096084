import ATSPolicy
import Synchronization

/// Failed logins slowed per client address (proxy credentials and the admin window's): a leaky
/// bucket per address. Each password check fills the address's bucket by one (before the check, so
/// attempts sent in parallel count too); a correct password takes its one back; the bucket drains by
/// one every `leakSeconds`. Past `free` the check waits a growing delay; a full bucket is refused
/// (429 with Retry-After) without any hash being computed, which is what a guesser costs the proxy.
///
/// Other addresses have their own buckets, so a device with the right password is not slowed by a
/// guesser beside it. IPv6 clients count per /64 (one host holds a whole /64). The table is bounded:
/// at `capacity` the drained entries go, then the emptiest one.
package final class LoginThrottle: Sendable {
    package struct Limits: Sendable {
        /// Attempts in the bucket at which further ones are refused.
        package var burst = 10.0
        /// Attempts that run without delay.
        package var free = 3.0
        /// Seconds for the bucket to drain by one attempt.
        package var leakSeconds = 30.0
        /// The first delay, doubled per attempt past `free`, and its cap.
        package var firstDelay = 0.25
        package var maximumDelay = 4.0
        /// Addresses remembered at most.
        package var capacity = 4096

        package init() {}
    }

    /// What a password check may do now.
    package enum Admission: Equatable, Sendable {
        /// Check it after `delay` seconds (0: at once).
        case proceed(delay: Double)
        /// Refuse it: the client may try again in `retryAfter` seconds.
        case refuse(retryAfter: Int)
    }

    private struct Bucket {
        var level: Double
        var updated: Double

        func level(at now: Double, leak: Double) -> Double {
            max(0, level - max(0, now - updated) / leak)
        }
    }

    package let limits: Limits
    private let table = Mutex<[IPAddress: Bucket]>([:])

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Counts one password check from `client` and says whether, and when, it may run.
    package func admit(_ client: IPAddress, now: Double) -> Admission {
        let key = LoginThrottle.key(client)
        return table.withLock { table in
            let level = table[key]?.level(at: now, leak: limits.leakSeconds) ?? 0
            if let retry = refusal(level: level) { return .refuse(retryAfter: retry) }
            if table[key] == nil, table.count >= limits.capacity { evict(&table, now: now) }
            let filled = level + 1
            table[key] = Bucket(level: filled, updated: now)
            guard filled > limits.free else { return .proceed(delay: 0) }
            let doublings = min(filled - limits.free - 1, 16)
            return .proceed(delay: min(limits.maximumDelay, limits.firstDelay * Double(1 << Int(doublings))))
        }
    }

    /// Seconds until `client` may try again when its bucket is full, else nil. Counts nothing: asked
    /// before credentials that need no hash (known ones), which must not become a free oracle.
    package func refusal(_ client: IPAddress, now: Double) -> Int? {
        let key = LoginThrottle.key(client)
        return table.withLock { table in
            table[key].flatMap { refusal(level: $0.level(at: now, leak: limits.leakSeconds)) }
        }
    }

    /// The check found the password right: its attempt is taken back.
    package func succeeded(_ client: IPAddress, now: Double) {
        let key = LoginThrottle.key(client)
        table.withLock { table in
            guard let bucket = table[key] else { return }
            let level = bucket.level(at: now, leak: limits.leakSeconds) - 1
            table[key] = level > 0 ? Bucket(level: level, updated: now) : nil
        }
    }

    /// Addresses remembered now (for tests of the bound).
    package var count: Int { table.withLock { $0.count } }

    private func refusal(level: Double) -> Int? {
        guard level + 1 > limits.burst else { return nil }
        return max(1, Int(((level + 1 - limits.burst) * limits.leakSeconds).rounded(.up)))
    }

    /// Makes room for one more address: every drained bucket goes; if none has, the emptiest one.
    private func evict(_ table: inout [IPAddress: Bucket], now: Double) {
        let leak = limits.leakSeconds
        table = table.filter { $0.value.level(at: now, leak: leak) > 0 }
        guard table.count >= limits.capacity,
              let emptiest = table.min(by: { $0.value.level(at: now, leak: leak) < $1.value.level(at: now, leak: leak) })
        else { return }
        table[emptiest.key] = nil
    }

    /// IPv4 addresses count alone; IPv6 ones by their /64.
    private static func key(_ client: IPAddress) -> IPAddress {
        switch DestinationACL.normalised(client) {
        case .v4(let value): .v4(value)
        case .v6(let value): .v6(value & ~UInt128(UInt64.max))
        }
    }
}
