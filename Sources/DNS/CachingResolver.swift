import ATSPolicy
import EventLoops
import POSIX
import Synchronization

/// The daemon's resolver: c-ares on an event loop of its own (its sockets in that loop's epoll set,
/// its timeouts on that loop's clock: no thread per lookup, and a slow zone delays nobody but the
/// connections waiting for it), a cache shared by every loop, and one lookup in flight per name and
/// address family, which every connection asking meanwhile waits for.
///
/// A cached answer is read on the asking connection's own loop under a lock, with no hand-off; only a
/// lookup goes through this loop. Everything below "loop-confined" is touched on `loop.queue` only.
package final class CachingResolver: @unchecked Sendable {
    /// The resolver's own loop. (Not one of the proxy's: a burst of answers is handled beside the
    /// connections, and the proxy's loop count stays the proxy's business.)
    package let loop = EventLoop(label: "atsgate.dns")
    let cache = DNSCache()
    package let metrics = DNSMetrics()
    private let inFlightCount = Atomic<Int>(0)

    // Loop-confined.
    private var settings = ResolverSettings()
    private var channel: CAresChannel?
    /// Why there is no channel (c-ares could not start), for the failures it causes.
    private var channelProblem = "the resolver is not configured"
    /// Channels of earlier generations, destroyed once their lookups are done.
    private var retiring: [CAresChannel] = []
    private var inFlight: [DNSCache.Key: Pending] = [:]

    package init() {}

    /// Applies a generation's settings: a new c-ares channel (so a reload re-reads /etc/resolv.conf
    /// and `--dns-server`); the old one finishes the lookups it has. The cache stays.
    package func configure(_ settings: ResolverSettings) {
        loop.queue.sync {
            self.settings = settings
            do throws(LookupFailure) {
                let fresh = try CAresChannel(loop: loop, servers: settings.servers)
                if let old = channel { retiring.append(old) }
                channel = fresh
            } catch {
                channelProblem = error.message
            }
            retireIdleChannels()
        }
    }

    /// The resolver's counters for /metrics.
    package var snapshot: DNSMetrics.Snapshot {
        metrics.snapshot(inFlight: inFlightCount.load(ordering: .relaxed), cacheEntries: cache.count)
    }

    /// One family of `name`: the cache's fresh (or negative) answer at once, on this call; otherwise
    /// the lookup in flight for it, shared. `handler` runs on `waiter`.
    func resolve(_ name: String, _ family: AddressFamily, on waiter: EventLoop, _ handler: @escaping (Resolution) -> Void) {
        let key = DNSCache.Key(name: name, family: family)
        var stale: Stale?
        switch cache.lookup(key) {
        case .fresh(let addresses):
            metrics.count(.hit)
            return handler(Resolution(family: family, result: .success(addresses), source: .cache))
        case .negative(let failure):
            metrics.count(.negative)
            return handler(Resolution(family: family, result: .failure(failure), source: .cache))
        case .stale(let addresses, let expiredFor):
            stale = Stale(addresses: addresses, expiredAt: monotonic() - expiredFor)
        case .miss:
            break
        }
        metrics.count(.miss)
        nonisolated(unsafe) let handler = handler
        loop.execute { [self] in join(key, stale: stale, Waiter(loop: waiter, handler: handler)) }
    }

    // MARK: loop-confined

    private struct Waiter {
        var loop: EventLoop
        var handler: (Resolution) -> Void
    }

    private struct Stale {
        var addresses: [IPAddress]
        /// CLOCK_MONOTONIC seconds when the answer's TTL ran out.
        var expiredAt: Double
    }

    /// One lookup in flight: who waits for it, and the stale answer to fall back on.
    private final class Pending {
        let key: DNSCache.Key
        let started = monotonic()
        var stale: Stale?
        var waiters: [Waiter] = []
        /// Waiters got the stale answer (the client response timer ran out): later ones get it at once.
        var staleServed = false
        /// The deadline passed: the waiters were answered, the lookup only updates the cache now.
        var answered = false

        init(key: DNSCache.Key, stale: Stale?) {
            self.key = key
            self.stale = stale
        }
    }

    private func join(_ key: DNSCache.Key, stale: Stale?, _ waiter: Waiter) {
        if let pending = inFlight[key] {
            if pending.staleServed, let stale = pending.stale {
                return serve(stale, to: [waiter], key, problem: "a refresh is late")
            }
            pending.waiters.append(waiter)
            return
        }
        let pending = Pending(key: key, stale: stale)
        pending.waiters.append(waiter)
        inFlight[key] = pending
        inFlightCount.add(1, ordering: .relaxed)
        // With a stale answer to fall back on, the waiters get it after RFC 8767's client response
        // timer; without one, they wait up to --dns-timeout.
        let first = stale != nil && settings.staleAnswerDelay < settings.timeout ? settings.staleAnswerDelay : settings.timeout
        loop.clock.schedule(pending, after: first, repeating: false) { [self] in timerFired(pending) }
        guard let channel else {
            return complete(pending, .failure(LookupFailure(.failure, "\(describe(key)): \(channelProblem)")))
        }
        // (A name in /etc/hosts is answered inside this call.)
        channel.lookup(key.name, family: key.family) { [self] result in complete(pending, result) }
    }

    private func timerFired(_ pending: Pending) {
        guard !pending.answered else { return }
        let elapsed = monotonic() - pending.started
        if elapsed < settings.timeout, let stale = pending.stale, !pending.staleServed {
            pending.staleServed = true
            let waiters = pending.waiters
            pending.waiters = []
            serve(stale, to: waiters, pending.key, problem: "the resolver has not answered in \(seconds(elapsed))")
            loop.clock.schedule(pending, after: settings.timeout - elapsed, repeating: false) { [self] in
                timerFired(pending)
            }
            return
        }
        // The deadline: the waiters are answered now; c-ares' own answer, if it comes, still fills the cache.
        finish(pending)
        metrics.count(.timeout, seconds: elapsed)
        let failure = LookupFailure(.timeout, "\(describe(pending.key)): no answer in \(seconds(settings.timeout)) (--dns-timeout)")
        answer(pending, with: .failure(failure), milliseconds: elapsed * 1000)
    }

    private func complete(_ pending: Pending, _ result: Result<Answer, LookupFailure>) {
        let key = pending.key
        switch result {
        case .success(let found):
            cache.store(key, addresses: found.addresses, ttl: settings.clamped(ttl: found.ttl), stale: settings.staleLimit,
                        capacity: settings.cacheCapacity)
        case .failure(let failure) where failure.isNegative:
            cache.store(key, negative: failure, ttl: settings.negativeLifetime, capacity: settings.cacheCapacity)
        case .failure:
            break // a failing resolver never replaces what the cache knows
        }
        guard !pending.answered else { return }
        finish(pending)
        let elapsed = monotonic() - pending.started
        let counted: DNSMetrics.LookupResult
        switch result {
        case .success: counted = .success
        case .failure(let failure):
            switch failure.kind {
            case .nxdomain: counted = .nxdomain
            case .noData: counted = .nodata
            case .timeout: counted = .timeout
            case .failure: counted = .failure
            }
        }
        metrics.count(counted, seconds: elapsed)
        answer(pending, with: result.map(\.addresses), milliseconds: elapsed * 1000)
    }

    /// The lookup is over for its waiters: out of the table and off the clock.
    private func finish(_ pending: Pending) {
        pending.answered = true
        loop.clock.cancel(pending)
        if inFlight[pending.key] === pending {
            inFlight[pending.key] = nil
            inFlightCount.subtract(1, ordering: .relaxed)
        }
        // Not from inside a c-ares callback (this may be one): destroying a channel there is not allowed.
        if !retiring.isEmpty { loop.execute { [self] in retireIdleChannels() } }
    }

    /// Hands the waiters the result; a failure that is not an authoritative "no address" falls back on
    /// the stale answer when there is one (RFC 8767).
    private func answer(_ pending: Pending, with result: Result<[IPAddress], LookupFailure>, milliseconds: Double) {
        let waiters = pending.waiters
        pending.waiters = []
        if case .failure(let failure) = result, !failure.isNegative, let stale = pending.stale, settings.staleLimit > 0 {
            return serve(stale, to: waiters, pending.key, problem: failure.message)
        }
        let resolution = Resolution(family: pending.key.family, result: result, source: .lookup(milliseconds: milliseconds))
        for waiter in waiters { deliver(resolution, to: waiter) }
    }

    private func serve(_ stale: Stale, to waiters: [Waiter], _ key: DNSCache.Key, problem: String) {
        let expired = max(0, monotonic() - stale.expiredAt)
        let resolution = Resolution(family: key.family, result: .success(stale.addresses),
                                    source: .stale(problem: problem, expiredSeconds: expired))
        for waiter in waiters {
            metrics.count(.stale)
            deliver(resolution, to: waiter)
        }
    }

    private func deliver(_ resolution: Resolution, to waiter: Waiter) {
        let handler = waiter.handler
        waiter.loop.execute { handler(resolution) }
    }

    private func retireIdleChannels() {
        retiring.removeAll { old in
            guard old.pending == 0 else { return false }
            old.destroy()
            return true
        }
    }

    private func describe(_ key: DNSCache.Key) -> String { "\(key.name) (\(key.family.recordType))" }

    private func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\((value * 10).rounded() / 10) s"
    }
}
