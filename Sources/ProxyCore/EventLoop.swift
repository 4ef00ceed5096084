import Dispatch

/// One event loop: a serial Dispatch queue and what lives on it (readiness, deadlines, idle origin
/// connections). Everything here is touched only from `queue`.
final class EventLoop {
    let queue: DispatchQueue
    let poller: Poller
    let clock: LoopClock
    let pool = UpstreamPool()
    /// Decision-log lines not yet written (see DecisionLog).
    var logBuffer: [UInt8] = []
    /// This loop's channels on the listening sockets, and whether accepting is paused.
    var listeners: [Channel] = []
    var acceptPaused = false

    init(label: String) {
        queue = DispatchQueue(label: label)
        poller = Poller(queue: queue)
        clock = LoopClock(queue: queue)
    }
}
