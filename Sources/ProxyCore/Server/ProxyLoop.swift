import DecisionLog
import EventLoops
import Synchronization

/// What the proxy keeps per event loop, beside the loop itself: touched only on `loop.queue`, so
/// none of it needs a lock.
package final class ProxyLoop {
    let loop: EventLoop
    /// Idle keep-alive connections to origins.
    let pool = UpstreamPool()
    /// Decision records not yet handed to the log's writer (see RecordFormatter).
    var logBatch = LogBatch()
    /// `--log-overflow pause` and the log is full: this loop accepts nothing and reads no request
    /// head; the connections that wait for it to drain, to read again then.
    var logPaused = false
    var waitingForLog: [ObjectIdentifier] = []
    var decisionMessages = DecisionMessages()
    /// This loop's channels on the listening sockets, and whether accepting is paused.
    var listeners: [Channel] = []
    var acceptPaused = false
    /// Connections open on this loop, so a stop can end each with a record of its own.
    var connections: [ObjectIdentifier: ProxyConnection] = [:]
    /// Client connections this loop holds or has been handed and not yet closed: what the accepting
    /// loop reads (from any loop) to hand a connection to the least loaded one.
    let load = Atomic<Int>(0)
    /// Set when the daemon stops: idle keep-alive clients are closed, no new request is read.
    var draining = false
    /// Counters for /metrics; touched only on the loop's queue, summed when scraped.
    var metrics = LoopMetrics()

    init(label: String, now: @escaping () -> Double = monotonic) {
        loop = EventLoop(label: label, now: now)
    }

    /// Accepts unless at the connection cap or held back by the log.
    func updateListening() {
        let accepting = !acceptPaused && !logPaused
        for listener in listeners { listener.wantRead(accepting) }
    }

    /// Counts a finished record and hands it to the log and to the operator's observer.
    func write(_ record: DecisionRecord, _ generation: Generation) {
        metrics.count(record)
        generation.daemon.observer?.observe(record, policy: generation.log.policy)
        generation.daemon.decisions.add(1, ordering: .relaxed)
        generation.log.write(record, into: &logBatch)
    }

    /// On each clock tick: the records go to the log's writer; under `--log-overflow pause` the loop
    /// follows the log, holding back new connections and requests while it is full.
    func handOverLog(to sink: LogSink) {
        loop.assertOnLoop()
        sink.offer(&logBatch)
        let paused = sink.isPaused
        guard paused != logPaused else { return }
        logPaused = paused
        updateListening()
        guard !paused else { return }
        let waiting = waitingForLog
        waitingForLog = []
        for id in waiting { connections[id]?.logDrained() }
    }
}
