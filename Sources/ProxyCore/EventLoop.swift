import Dispatch
import Synchronization
import POSIX

/// One event loop: a serial Dispatch queue and what lives on it (readiness, deadlines, idle origin
/// connections). Everything here is touched only from `queue`.
final class EventLoop {
    let queue: DispatchQueue
    let poller: Poller
    let clock: LoopClock
    let pool = UpstreamPool()
    /// Decision-log lines not yet written (see DecisionLog).
    var logBuffer: [UInt8] = []
    var decisionMessages = DecisionMessages()
    /// This loop's channels on the listening sockets, and whether accepting is paused.
    var listeners: [Channel] = []
    var acceptPaused = false
    /// Connections open on this loop, so a stop can end each with a record of its own.
    var connections: [ObjectIdentifier: ProxyConnection] = [:]
    /// Set when the daemon stops: idle keep-alive clients are closed, no new request is read.
    var draining = false
    /// Counters for /metrics; touched only on `queue`, summed when scraped.
    var metrics = LoopMetrics()
    /// When the loop's clock last ran (CLOCK_MONOTONIC seconds): a loop that stops ticking is stuck,
    /// and the watchdog and /healthz say so.
    let lastTick = Atomic<Int64>(0)
    /// Read buffer shared by the loop's connections (the loop runs one handler at a time): a fresh,
    /// zeroed buffer per read was a malloc and a 64 KiB memset each time.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Empty pipes kept for the next relay: creating and closing two pipes per tunnel is four
    /// descriptors and six system calls.
    var pipes: [(read: Int32, write: Int32)] = []
    static let maximumSparePipes = 64

    /// A pipe for a relay direction, spare or new.
    func takePipe() throws(SystemError) -> (read: Int32, write: Int32) {
        if let pipe = pipes.popLast() { return pipe }
        return try SystemCall.pipe()
    }

    /// Returns a pipe; only an empty one may be kept.
    func returnPipe(_ pipe: (read: Int32, write: Int32), empty: Bool) {
        if empty, pipes.count < EventLoop.maximumSparePipes {
            pipes.append(pipe)
        } else {
            SystemCall.close(pipe.read)
            SystemCall.close(pipe.write)
        }
    }

    /// Runs `work` on the loop's queue; for other threads (a resolver, a certificate verdict), whose
    /// results would otherwise wait for a drain's linger to end.
    func execute(_ work: @escaping () -> Void) {
        nonisolated(unsafe) let work = work // confined to the loop's queue from here on
        queue.async { work() }
        poller.wake()
    }

    /// `execute`, counted in `group` until the work has run.
    func execute(in group: DispatchGroup, _ work: @escaping () -> Void) {
        group.enter()
        execute {
            work()
            group.leave()
        }
    }

    init(label: String) {
        queue = DispatchQueue(label: label)
        poller = Poller(queue: queue)
        clock = LoopClock(queue: queue)
    }
}
