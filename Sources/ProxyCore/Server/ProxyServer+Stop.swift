import ATSPolicy
import DecisionLog
import Dispatch
import EventLoops
import Glibc
import ProxyAccess
import Synchronization
import POSIX

/// Stop (SIGTERM): stop accepting, let connections finish within the grace period, flush the log.
extension ProxyServer {
    /// How a stop ended: the connections cut at the end of the grace period, and the records the log
    /// could not write before it ended (its reader stalled, its disk full).
    public struct StopOutcome: Sendable {
        public var cut: Int
        public var unwrittenRecords: Int
    }

    /// Stops accepting, closes idle connections, lets the others finish for up to `grace` seconds,
    /// then ends the rest (each with its own record), lets the log write what it holds until the grace
    /// period ends (at least one more second), its `run-stop` last, and calls `completion`.
    /// `handOver`: an upgrade ends this run (the `run-stop` names the successor). `listenersClosed`
    /// runs once nothing accepts any more.
    public func stop(grace: Double, handOver: RunHandOver? = nil, listenersClosed: @escaping @Sendable () -> Void = {},
                     completion: @escaping @Sendable (StopOutcome) -> Void) {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        let end = monotonic() + grace
        let group = DispatchGroup()
        for proxyLoop in loops {
            proxyLoop.loop.execute(in: group) {
                proxyLoop.draining = true
                for listener in proxyLoop.listeners { listener.detach() }
                proxyLoop.listeners = []
                for connection in Array(proxyLoop.connections.values) { connection.closeIfIdle() }
            }
        }
        group.notify(queue: .global()) { [self] in
            for fd in listenFDs + (quicGate?.listeners.map(\.fd) ?? []) { SystemCall.close(fd) }
            listenersClosed()
            waitForConnections(until: end) { [self] cut in
                let unwritten = flushLog(until: max(end, monotonic() + 1), stop: RunStop(cut: cut, handOver: handOver))
                completion(StopOutcome(cut: cut, unwrittenRecords: unwritten))
            }
        }
    }

    private func waitForConnections(until deadline: Double, completion: @escaping @Sendable (Int) -> Void) {
        if daemon.open.load(ordering: .relaxed) == 0 {
            return completion(0)
        }
        if monotonic() < deadline {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { [self] in
                waitForConnections(until: deadline, completion: completion)
            }
            return
        }
        var cut = 0
        for proxyLoop in loops {
            proxyLoop.loop.queue.sync {
                for connection in Array(proxyLoop.connections.values) {
                    cut += 1
                    connection.endAtShutdown()
                }
            }
        }
        completion(cut)
    }
}
