import Glibc

/// poll(2) on one descriptor with a timeout in seconds, on the monotonic clock; EINTR restarts with
/// the time left.
public enum Poll {
    public enum Outcome: Equatable, Sendable {
        case ready
        case timedOut
        case failed(Int32)
    }

    public static func wait(fd: Int32, events: Int16, timeout: Double) -> Outcome {
        wait(fd: fd, events: events, until: ContinuousClock.now + .milliseconds(Int64(timeout * 1000)))
    }

    /// Waits for `events` until `deadline` (ContinuousClock is CLOCK_MONOTONIC here).
    public static func wait(fd: Int32, events: Int16, until deadline: ContinuousClock.Instant) -> Outcome {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = max(0, Int32(clamping: left.components.seconds * 1000
                                                + left.components.attoseconds / 1_000_000_000_000_000))
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, milliseconds)
            if result > 0 { return .ready }
            if result == 0 { return .timedOut }
            if errno != EINTR { return .failed(errno) }
        }
    }

    /// "5 s", "0.5 s".
    public static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
