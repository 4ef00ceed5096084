import Foundation

/// A fixed set of threads for work that blocks (the proxy keeps one per kind of work: BlockingPools).
/// A concurrent Dispatch queue would start a thread for every blocked item (libdispatch
/// over-commits up to its own limit), so a burst of slow work could grow the daemon by dozens of
/// threads; here the burst waits in a FIFO and the thread count stays what it was at start. The event
/// loops never run this work: it reaches them again only through `EventLoop.execute`.
package final class BlockingPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [@Sendable () -> Void] = []
    /// Index of the next item in `pending` (items before it have been taken).
    private var next = 0

    package init(threads: Int, name: String) {
        for index in 0..<threads {
            let thread = Thread { [self] in run() }
            thread.name = "\(name).\(index)"
            thread.start()
        }
    }

    /// Queues `work` for the next free thread.
    package func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        pending.append(work)
        condition.signal()
        condition.unlock()
    }

    /// Items queued but not yet started.
    package var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return pending.count - next
    }

    private func run() {
        while true {
            condition.lock()
            while next == pending.count { condition.wait() }
            let work = pending[next]
            next += 1
            // Compact now and then, so the array does not keep every item ever queued.
            if next == pending.count || next > 1024 {
                pending.removeFirst(next)
                next = 0
            }
            condition.unlock()
            work()
        }
    }
}
