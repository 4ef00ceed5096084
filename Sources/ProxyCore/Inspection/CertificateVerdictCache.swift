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
    struct Key: Hashable, Sendable {
        var host: String
        var address: SocketAddress?
        var requirements: Requirements
        var pin: PinnedDomain?
        var chain: [[UInt8]]
        /// SCTs the ServerHello carried (they count for R16).
        var scts: [[UInt8]] = []
    }

    private struct Entry {
        var judgement: ServerJudgement
        var expires: Double
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var waiting: [Key: [(EventLoop, (ServerJudgement) -> Void)]] = [:]
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let timeToLive: Double

    /// Hits and misses, kept by the server so they outlive a reload (which starts a new cache: the
    /// trust store or the pins may have changed).
    private let daemon: DaemonState

    init(capacity: Int, timeToLive: Double, daemon: DaemonState) {
        self.capacity = capacity
        self.timeToLive = timeToLive
        self.daemon = daemon
    }

    /// The fresh verdict for `key`, counted as a hit; nil (not counted) when there is none.
    func lookup(_ key: Key) -> ServerJudgement? {
        let time = monotonic()
        let found = state.withLock { state -> ServerJudgement? in
            guard let entry = state.entries[key], entry.expires > time else { return nil }
            return entry.judgement
        }
        if found != nil { daemon.verdictHits.add(1, ordering: .relaxed) }
        return found
    }

    /// Computes the verdict on `pool`, off the loops (once per key at a time), and calls `completion`
    /// on `loop`.
    func compute(_ key: Key, on pool: BlockingPool, compute: @escaping @Sendable () -> ServerJudgement, on loop: EventLoop,
                 completion: @escaping (ServerJudgement) -> Void) {
        nonisolated(unsafe) let completion = completion
        daemon.verdictMisses.add(1, ordering: .relaxed)
        let first = state.withLock { state -> Bool in
            let isFirst = state.waiting[key] == nil
            state.waiting[key, default: []].append((loop, completion))
            return isFirst
        }
        guard first else { return }
        pool.submit { [self] in
            let judgement = compute()
            let time = monotonic()
            let waiters = state.withLock { state -> [(EventLoop, (ServerJudgement) -> Void)] in
                if state.entries.count >= capacity {
                    state.entries = state.entries.filter { $0.value.expires > time }
                    // Still full: drop about a quarter, oldest first.
                    if state.entries.count >= capacity {
                        let oldest = state.entries.sorted { $0.value.expires < $1.value.expires }.prefix(capacity / 4 + 1)
                        for (key, _) in oldest { state.entries[key] = nil }
                    }
                }
                state.entries[key] = Entry(judgement: judgement, expires: time + timeToLive)
                return state.waiting.removeValue(forKey: key) ?? []
            }
            for (loop, completion) in waiters {
                nonisolated(unsafe) let completion = completion
                loop.execute { completion(judgement) }
            }
        }
    }
}
