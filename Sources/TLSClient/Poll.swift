import Glibc

/// poll(2) on one descriptor with a timeout in seconds; EINTR restarts with the time left.
enum Poll {
    enum Outcome: Equatable {
        case ready
        case timedOut
        case failed(Int32)
    }

    static func wait(fd: Int32, events: Int16, timeout: Double) -> Outcome {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
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
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
