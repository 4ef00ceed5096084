import Dispatch

/// One coarse clock per event-loop queue: a single repeating timer, created once, that runs the
/// deadlines connections register (head, connect and idle timeouts, the half-close tick).
/// Creating and cancelling a timer source per phase cost a libdispatch manager round trip each.
///
/// Deadlines are kept in the time `now` reads (CLOCK_MONOTONIC unless a test gave a MovableClock),
/// so that a test moves time past a timeout instead of waiting for it.
package final class LoopClock {
    /// Resolution of every deadline.
    package static let resolution = 0.05

    /// The time deadlines are measured in, in seconds; what timed code compares with its deadlines
    /// (a connection's idle time) reads it too.
    package let now: () -> Double

    private struct Entry {
        var deadline: Double
        var interval: Double?
        var handler: () -> Void
        /// Which scheduling this is: a handler that cancels or replaces another owner's deadline in
        /// the same tick must keep the old one from running.
        var serial: UInt64
    }

    private let queue: DispatchQueue
    private let timer: DispatchSourceTimer
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var nextSerial: UInt64 = 0

    package init(queue: DispatchQueue, now: @escaping () -> Double = monotonic) {
        self.queue = queue
        self.now = now
        timer = DispatchSource.makeTimerSource(queue: queue)
        let period = DispatchTimeInterval.milliseconds(Int(LoopClock.resolution * 1000))
        timer.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(10))
        timer.setEventHandler { [unowned self] in tick() }
        timer.resume()
    }

    /// Runs `handler` after `seconds` (then every `seconds` when repeating), replacing what `owner`
    /// had scheduled. Called on the clock's queue only.
    package func schedule(_ owner: AnyObject, after seconds: Double, repeating: Bool, _ handler: @escaping () -> Void) {
        assertOnLoop(queue)
        nextSerial &+= 1
        entries[ObjectIdentifier(owner)] = Entry(deadline: now() + seconds, interval: repeating ? seconds : nil,
                                                 handler: handler, serial: nextSerial)
    }

    package func cancel(_ owner: AnyObject) {
        assertOnLoop(queue)
        entries[ObjectIdentifier(owner)] = nil
    }

    /// Runs the handlers whose deadline has come. The loop's timer calls it every `resolution`; a test
    /// that moved its clock calls it on the loop's queue to run what is due without waiting for the timer.
    package func tick() {
        assertOnLoop(queue)
        guard !entries.isEmpty else { return }
        let time = now()
        let due = entries.filter { $0.value.deadline <= time }
        for (key, entry) in due {
            // An earlier handler of this tick may have cancelled or replaced this deadline (a
            // connection that timed out cancels its Happy Eyeballs timer): then it must not run.
            guard entries[key]?.serial == entry.serial else { continue }
            // A handler may cancel or reschedule its own entry (or close its connection).
            if let interval = entry.interval {
                entries[key]?.deadline = time + interval
            } else {
                entries[key] = nil
            }
            entry.handler()
        }
    }
}
