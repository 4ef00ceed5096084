import Dispatch

/// One coarse clock per event-loop queue: a single repeating timer, created once, that runs the
/// deadlines connections register (head, connect and idle timeouts, the half-close tick).
/// Creating and cancelling a timer source per phase cost a libdispatch manager round trip each.
package final class LoopClock {
    /// Resolution of every deadline.
    package static let resolution = 0.05

    private struct Entry {
        package var deadline: Double
        package var interval: Double?
        package var handler: () -> Void
    }

    private let timer: DispatchSourceTimer
    private var entries: [ObjectIdentifier: Entry] = [:]

    package init(queue: DispatchQueue) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        let period = DispatchTimeInterval.milliseconds(Int(LoopClock.resolution * 1000))
        timer.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(10))
        timer.setEventHandler { [unowned self] in tick() }
        timer.resume()
    }

    /// Runs `handler` after `seconds` (then every `seconds` when repeating), replacing what `owner`
    /// had scheduled. Called on the clock's queue only.
    package func schedule(_ owner: AnyObject, after seconds: Double, repeating: Bool, _ handler: @escaping () -> Void) {
        entries[ObjectIdentifier(owner)] = Entry(deadline: monotonic() + seconds, interval: repeating ? seconds : nil,
                                                 handler: handler)
    }

    package func cancel(_ owner: AnyObject) {
        entries[ObjectIdentifier(owner)] = nil
    }

    private func tick() {
        guard !entries.isEmpty else { return }
        let time = monotonic()
        let due = entries.filter { $0.value.deadline <= time }
        for (key, entry) in due {
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
