/// Per-minute decision counts, for the chart of decisions over time.
public struct TimeBuckets: Sendable {
    /// Minute since the epoch -> records per `LoggedAction.rawValue`.
    public var minutes: [Int64: [Int]] = [:]
    /// The minute being counted: records arrive mostly in order, so most need no dictionary lookup.
    private var current: Int64 = .min
    private var counts = [Int](repeating: 0, count: LoggedAction.allCases.count)

    package mutating func add(time: Int64, action: LoggedAction) {
        let minute = time >= 0 ? time / 60_000 : (time - 59_999) / 60_000
        if minute != current {
            flush()
            current = minute
        }
        counts[action.rawValue] += 1
    }

    /// Moves the current minute's counts into `minutes`.
    package mutating func flush() {
        guard current != .min else { return }
        if let existing = minutes[current] {
            minutes[current] = zip(existing, counts).map(+)
        } else {
            minutes[current] = counts
        }
        counts = [Int](repeating: 0, count: LoggedAction.allCases.count)
        current = .min
    }
}
