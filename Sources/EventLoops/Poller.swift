import Dispatch
import CAtsgateShims
import Glibc
import POSIX

/// Readiness for one event-loop queue: its own epoll instance, watched by a single Dispatch read
/// source, so the loop stays Dispatch's while every descriptor's interest is changed with one inline
/// epoll_ctl(2) on the queue itself.
///
/// Why not a Dispatch source per descriptor, as before: each suspend, resume and cancel was a round
/// trip through libdispatch's manager thread (about twenty per tunnel), and its epoll bookkeeping lost
/// wakeups twice (a late EPOLL_CTL_DEL hitting a reused descriptor; EPOLLHUP on a disarmed descriptor
/// deleting its registration) and once trapped ("Source finalized twice"). Here registration is
/// level-triggered and synchronous: what is asked for is what epoll reports, and a descriptor is
/// forgotten here before it is closed (the close itself takes it out of the epoll set: no proxy
/// socket is ever duplicated or inherited by a child).
package final class Poller {
    /// The loop's queue: the only one its channels may be used on.
    package let queue: DispatchQueue
    private let epoll: Epoll
    private let source: DispatchSourceRead
    private var channels: [Int32: Channel] = [:]
    private var events = [epoll_event](repeating: epoll_event(), count: 256)
    /// An eventfd in the epoll set: written when work is queued for the loop from another thread,
    /// so that a drain waiting for the next batch returns to Dispatch and the work runs at once.
    private let wakeFD: Int32
    private var woken = false

    package init(queue: DispatchQueue) {
        self.queue = queue
        do {
            epoll = try Epoll()
            wakeFD = try SystemCall.eventFD()
        } catch {
            preconditionFailure("an event loop cannot start: \(error)")
        }
        epoll.control(.add, wakeFD, events: EPOLLIN.rawValue)
        source = DispatchSource.makeReadSource(fileDescriptor: epoll.fd, queue: queue)
        source.setEventHandler { [unowned self] in drain() }
        source.resume()
    }

    /// Adds, changes or removes (`events == 0`) a descriptor's interest.
    package func update(_ channel: Channel, events wanted: UInt32, registered: Bool) -> Bool {
        let operation: Epoll.Operation
        if wanted == 0 {
            guard registered else { return false }
            operation = .delete
            channels[channel.fd] = nil
        } else {
            operation = registered ? .modify : .add
            channels[channel.fd] = channel
        }
        return epoll.control(operation, channel.fd, events: wanted) && wanted != 0
    }

    /// Takes a descriptor out of the epoll set (one that stays open, such as a listening socket
    /// every loop watches) and forgets it.
    package func remove(_ channel: Channel, registered: Bool) {
        if registered { epoll.control(.delete, channel.fd) }
        forget(channel)
    }

    /// Forgets a descriptor about to be closed (its close takes it out of the epoll set). An event
    /// already fetched for it in this batch finds no channel and is dropped.
    package func forget(_ channel: Channel) {
        if channels[channel.fd] === channel { channels[channel.fd] = nil }
    }

    /// Ends the drain in progress, or the next one, after its current batch. Any thread may call it.
    package func wake() {
        SystemCall.signal(eventFD: wakeFD)
    }

    private func drain() {
        // Under load, handling one batch makes the next ready (a write answered, a peer's close)
        // within microseconds. Each return to Dispatch costs a round through its manager thread
        // (re-arm the epoll descriptor, wait, wake a worker: two thread switches and four system
        // calls), so the handler waits here for the next batch instead, for up to `linger` of
        // quiet, and returns after `budget` in any case so the loop's timers and queued work get
        // their turn; work queued from another thread (a resolved name, a certificate verdict)
        // wakes it at once (`wake`). (Measured on the tunnels benchmark: +7-13% tunnels/s, p50 -10%,
        // the same CPU per tunnel; idle loops never get here, so they cost nothing.)
        let started = monotonicMilliseconds()
        woken = false
        while !woken, monotonicMilliseconds() - started < Poller.budget {
            let count = events.withUnsafeMutableBufferPointer { buffer in
                epoll.wait(into: buffer, timeoutMilliseconds: Poller.linger)
            }
            guard count > 0 else { return }
            for index in 0..<Int(count) {
                let event = events[index]
                if event.data.fd == wakeFD {
                    SystemCall.drain(eventFD: wakeFD)
                    woken = true
                    continue
                }
                // A handler earlier in this batch may have closed this descriptor (and its number may
                // even be reused): only channels still registered under it get the event.
                guard let channel = channels[event.data.fd] else { continue }
                channel.handle(event.events)
            }
        }
    }

    /// Milliseconds a drain may run before it returns to Dispatch. Work queued from another thread
    /// ends a drain at once (`wake`); only the loop's clock waits for the budget, and its resolution
    /// is 50 ms. (Was 4 ms: on the tunnels benchmark, a return every 4 ms was two thirds of the
    /// eventfd writes and a third of the futex calls per tunnel, libdispatch re-arming the source;
    /// at 16 ms: writes 0.26 -> 0.08 and futex 0.29 -> 0.19 per tunnel.)
    package static let budget: Int64 = 16
    /// Milliseconds without an event after which a drain returns.
    package static let linger: Int32 = 1
}
