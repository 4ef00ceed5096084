import Dispatch
import Synchronization
import POSIX

/// One event loop: a serial Dispatch queue and what lives on it (readiness, deadlines, a read buffer,
/// spare pipes). Everything here is touched only from `queue`; what a user of the loop keeps per loop
/// (the proxy's idle origin connections, its log buffer) lives in that user's own object beside it.
package final class EventLoop {
    package let queue: DispatchQueue
    package let poller: Poller
    package let clock: LoopClock
    /// When the loop's clock last ran (CLOCK_MONOTONIC seconds): a loop that stops ticking is stuck,
    /// and the watchdog and /healthz say so.
    package let lastTick = Atomic<Int64>(0)
    /// Read buffer shared by the loop's connections (the loop runs one handler at a time): a fresh,
    /// zeroed buffer per read was a malloc and a 64 KiB memset each time.
    package let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Empty pipes kept for the next relay: creating and closing two pipes per tunnel is four
    /// descriptors and six system calls.
    package var pipes: [(read: Int32, write: Int32)] = []
    package static let maximumSparePipes = 64

    /// A pipe for a relay direction, spare or new.
    package func takePipe() throws(SystemError) -> (read: Int32, write: Int32) {
        assertOnLoop()
        if let pipe = pipes.popLast() { return pipe }
        return try SystemCall.pipe()
    }

    /// Returns a pipe; only an empty one may be kept.
    package func returnPipe(_ pipe: (read: Int32, write: Int32), empty: Bool) {
        assertOnLoop()
        if empty, pipes.count < EventLoop.maximumSparePipes {
            pipes.append(pipe)
        } else {
            SystemCall.close(pipe.read)
            SystemCall.close(pipe.write)
        }
    }

    /// Runs `work` on the loop's queue; for other threads (a resolver, a certificate verdict), whose
    /// results would otherwise wait for a drain's linger to end.
    package func execute(_ work: @escaping () -> Void) {
        nonisolated(unsafe) let work = work // confined to the loop's queue from here on
        queue.async { work() }
        poller.wake()
    }

    /// `execute`, counted in `group` until the work has run.
    package func execute(in group: DispatchGroup, _ work: @escaping () -> Void) {
        group.enter()
        execute {
            work()
            group.leave()
        }
    }

    /// `now`: the time the loop's deadlines are kept in (a test's MovableClock, else CLOCK_MONOTONIC).
    package init(label: String, now: @escaping () -> Double = monotonic) {
        queue = DispatchQueue(label: label)
        poller = Poller(queue: queue)
        clock = LoopClock(queue: queue, now: now)
    }
}
