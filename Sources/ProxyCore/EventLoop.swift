import Dispatch

/// One event loop: a serial Dispatch queue and what lives on it (readiness, deadlines, idle origin
/// connections). Everything here is touched only from `queue`.
final class EventLoop {
    let queue: DispatchQueue
    let poller: Poller
    let clock: LoopClock
    let pool = UpstreamPool()

    init(label: String) {
        queue = DispatchQueue(label: label)
        poller = Poller(queue: queue)
        clock = LoopClock(queue: queue)
    }
}
