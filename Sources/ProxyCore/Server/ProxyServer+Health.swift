import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import Inspection
import ProxyAccess
import Synchronization
import POSIX

/// What /healthz, /readyz and /metrics read: the loops' counters summed, the log's state, reloads.
extension ProxyServer {
    /// Whether every loop ran its clock recently; otherwise which one is stuck. A log that drops or
    /// holds back records is said, but is no reason to restart the daemon.
    public var health: (healthy: Bool, detail: String) {
        let time = monotonicMilliseconds()
        for (index, proxyLoop) in loops.enumerated() {
            let silent = time - proxyLoop.loop.lastTick.load(ordering: .relaxed)
            if silent > 5_000 { return (false, "event loop \(index) has not run for \(silent / 1000) s") }
        }
        guard let log = logTrouble else { return (true, "ok") }
        return (true, "ok; \(log)")
    }

    /// Ready while accepting: false once a stop began, and while the log holds requests back.
    public var isReady: Bool { readiness.ready }

    /// Whether new connections are served now, and if not, why.
    public var readiness: (ready: Bool, detail: String) {
        if stopping.load(ordering: .relaxed) { return (false, "stopping") }
        if daemon.sink.isPaused, let log = logTrouble { return (false, "paused: \(log)") }
        return (true, "ready")
    }

    /// What is wrong with the decision log, if anything: paused, failing, or records lost.
    private var logTrouble: String? {
        let log = daemon.sink.state
        let lost = log.droppedTotal > 0 ? "\(log.droppedTotal) records dropped since the start" : nil
        if log.paused {
            let why = log.failure ?? "its reader is not keeping up"
            return "decision log full (\(why)): new connections and requests wait until it drains (--log-overflow pause)"
        }
        if let failure = log.failure { return "decision log: \(failure)" + (lost.map { "; \($0)" } ?? "") }
        return lost.map { "decision log: \($0) (\(log.cause))" }
    }

    public var openConnections: Int { daemon.open.load(ordering: .relaxed) }

    /// Decision records written since the start.
    public var decisionCount: Int { daemon.decisions.load(ordering: .relaxed) }

    /// Sums every loop's counters (each read on its own queue) and hands the sum over on `queue`.
    package func collectMetrics(on queue: DispatchQueue, completion: @escaping (LoopMetrics) -> Void) {
        collect(LoopMetrics(), from: loops[...], on: queue, completion: completion)
    }

    /// Visits the loops one after another, the sum handed along from queue to queue: each loop's
    /// counters are read on its own queue and nothing is shared between them (a sum behind a lock that
    /// every loop wrote at once was a race ThreadSanitizer reported: Swift's Mutex is invisible to it).
    private func collect(_ sum: LoopMetrics, from rest: ArraySlice<ProxyLoop>, on queue: DispatchQueue,
                         completion: @escaping (LoopMetrics) -> Void) {
        guard let proxyLoop = rest.first else { return queue.async { completion(sum) } }
        proxyLoop.loop.execute { [self] in
            var sum = sum
            sum.add(proxyLoop.metrics)
            sum.loops.append(.init(accepted: proxyLoop.metrics.connectionsAccepted,
                                   open: proxyLoop.load.load(ordering: .relaxed)))
            if proxyLoop === loops[0], let gate = quicGate {
                sum.quicDatagrams = gate.datagrams
                sum.quicRemembered = gate.remembered
            }
            collect(sum, from: rest.dropFirst(), on: queue, completion: completion)
        }
    }

    /// The server-wide values of /metrics, as they are now.
    package var gauges: ServerGauges {
        var gauges = ServerGauges(
            connectionsOpen: openConnections, generation: generation,
            reloadsSucceeded: reloadsSucceeded.load(ordering: .relaxed),
            reloadsFailed: reloadsFailed.load(ordering: .relaxed),
            lastReloadTime: lastReload.withLock { $0 }, draining: !isReady,
            probeCache: ["hit": daemon.verdicts.hits.load(ordering: .relaxed),
                         "miss": daemon.verdicts.misses.load(ordering: .relaxed)],
            version: ProxyServer.version, log: daemon.sink.state)
        gauges.resolver = daemon.dns.gauges
        let configuration = current.withLock { $0.configuration }
        gauges.parents = configuration.namedParents.map { ($0.description, !daemon.parentHealth.isDown($0)) }
        gauges.blockingQueues = BlockingPools.backlogs
        if let store = configuration.inspection.trustStore { gauges.trustStore = (store.name, store.version) }
        return gauges
    }

    /// The version /metrics reports; the executable sets it.
    nonisolated(unsafe) public static var version = "unknown"
}
