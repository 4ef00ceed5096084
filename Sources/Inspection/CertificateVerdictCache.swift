import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Synchronization
import TLSWire
import POSIX

/// Verdicts on servers, shared by every loop: bounded, with a time to live, and one computation per key
/// at a time (the tunnels that ask meanwhile wait for the same answer).
package final class CertificateVerdictCache: Sendable {
    /// TLS 1.3 verdicts are keyed by host (the SNI), upstream address and requirements; wire verdicts
    /// (TLS 1.2 and below) by host, requirements and the chain itself.
    package struct Key: Hashable, Sendable {
        package var host: String
        package var address: SocketAddress?
        package var requirements: Requirements
        package var pin: PinnedDomain?
        package var chain: [[UInt8]]
        /// SCTs the ServerHello carried (they count for R16).
        package var scts: [[UInt8]] = []

        package init(host: String, address: SocketAddress?, requirements: Requirements, pin: PinnedDomain?,
                     chain: [[UInt8]], scts: [[UInt8]] = []) {
            self.host = host
            self.address = address
            self.requirements = requirements
            self.pin = pin
            self.chain = chain
            self.scts = scts
        }
    }

    private struct Entry {
        package var judgement: ServerJudgement
        package var expires: Double
        package var computed: Double
    }

    private struct State {
        package var entries: [Key: Entry] = [:]
        package var waiting: [Key: [(EventLoop, (ServerJudgement) -> Void)]] = [:]
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let timeToLive: Double

    /// Lookups answered from the cache and those computed, counted across reloads (the daemon's). The
    /// cache itself is one generation's: a reload starts a new one, so verdicts under one trust store
    /// (or set of pins) never answer for another.
    private let counters: VerdictCounters

    package init(capacity: Int, timeToLive: Double, counters: VerdictCounters) {
        self.capacity = capacity
        self.timeToLive = timeToLive
        self.counters = counters
    }

    /// The fresh verdict for `key`, counted as a hit; nil (not counted) when there is none.
    package func lookup(_ key: Key) -> ServerJudgement? {
        let time = monotonic()
        let found = state.withLock { state -> ServerJudgement? in
            guard let entry = state.entries[key], entry.expires > time else { return nil }
            guard entry.judgement.failedProbe, var blocking = entry.judgement.blocking else { return entry.judgement }
            // The failure is an earlier probe's: say so, and for how long it still answers.
            var judgement = entry.judgement
            blocking.message += " (an earlier probe's result, \(Int(time - entry.computed)) s ago; the server is"
                + " probed again after \(Int((entry.expires - time).rounded(.up))) s)"
            judgement.blocking = blocking
            return judgement
        }
        if found != nil { counters.hits.add(1, ordering: .relaxed) }
        return found
    }

    /// A second stage that may take a first verdict's place: the same judgement again with the
    /// network (caIssuers fetches), on a pool whose threads may wait on it.
    package struct IssuerFetch: Sendable {
        package var pool: BlockingPool
        package var compute: @Sendable () -> ServerJudgement

        package init(pool: BlockingPool, compute: @escaping @Sendable () -> ServerJudgement) {
            self.pool = pool
            self.compute = compute
        }
    }

    /// Computes the verdict on `pool`, off the loops (once per key at a time), and calls `completion`
    /// on `loop`. When the verdict lacks an issuer that a caIssuers URL may give (`missingIssuerURLs`)
    /// and `fetchingIssuers` is given, that stage's verdict replaces it: a CPU pool never waits on
    /// the network, and most chains (complete ones) never leave it.
    package func compute(_ key: Key, on pool: BlockingPool, compute: @escaping @Sendable () -> ServerJudgement,
                         fetchingIssuers: IssuerFetch? = nil, on loop: EventLoop,
                         completion: @escaping (ServerJudgement) -> Void) {
        nonisolated(unsafe) let completion = completion
        counters.misses.add(1, ordering: .relaxed)
        let first = state.withLock { state -> Bool in
            let isFirst = state.waiting[key] == nil
            state.waiting[key, default: []].append((loop, completion))
            return isFirst
        }
        guard first else { return }
        pool.submit { [self] in
            let judgement = compute()
            if let fetchingIssuers, !judgement.missingIssuerURLs.isEmpty {
                fetchingIssuers.pool.submit { [self] in finish(key, fetchingIssuers.compute()) }
            } else {
                finish(key, judgement)
            }
        }
    }

    /// Keeps `judgement` (no longer than it allows) and hands it to every tunnel that waited for it.
    private func finish(_ key: Key, _ judgement: ServerJudgement) {
        let time = monotonic()
        let lifetime = min(timeToLive, judgement.maximumAge ?? timeToLive)
        let waiters = state.withLock { state -> [(EventLoop, (ServerJudgement) -> Void)] in
            if state.entries.count >= capacity {
                state.entries = state.entries.filter { $0.value.expires > time }
                // Still full: drop about a quarter, oldest first.
                if state.entries.count >= capacity {
                    let oldest = state.entries.sorted { $0.value.expires < $1.value.expires }.prefix(capacity / 4 + 1)
                    for (key, _) in oldest { state.entries[key] = nil }
                }
            }
            state.entries[key] = Entry(judgement: judgement, expires: time + lifetime, computed: time)
            return state.waiting.removeValue(forKey: key) ?? []
        }
        for (loop, completion) in waiters {
            nonisolated(unsafe) let completion = completion
            loop.execute { completion(judgement) }
        }
    }
}

/// How many certificate verdict lookups the cache answered and how many it had to compute; kept by
/// the daemon so that they survive reloads (each generation has a cache of its own).
package final class VerdictCounters: Sendable {
    package let hits = Atomic<Int>(0)
    package let misses = Atomic<Int>(0)

    package init() {}
}
