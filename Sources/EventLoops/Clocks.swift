import Glibc
import Synchronization

/// The daemon's clocks, read in one place. Deadlines, timeouts, durations, cache lifetimes and the
/// loops' liveness run on CLOCK_MONOTONIC: a step of the wall clock (NTP, an operator) would otherwise
/// fire or hold every timeout at once. Only what a person reads as a time (a record's `time`, the
/// last reload) is wall-clock.
private func read(_ clock: clockid_t) -> timespec {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return spec
}

/// Seconds since the epoch.
package func wallClock() -> Double {
    let spec = read(CLOCK_REALTIME)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Seconds on CLOCK_MONOTONIC.
package func monotonic() -> Double {
    let spec = read(CLOCK_MONOTONIC)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Milliseconds on CLOCK_MONOTONIC, as the loops' liveness ticks are kept (an atomic integer).
package func monotonicMilliseconds() -> Int64 {
    let spec = read(CLOCK_MONOTONIC)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

/// CLOCK_MONOTONIC plus however far a test has moved it: a test gives its `now` to the loops
/// (`EventLoop(label:now:)`, ProxyServer's `now`) and moves it past a timeout instead of waiting
/// for one. It only ever moves ahead of the real clock, so what runs periodically (the log's
/// hand-off, the liveness tick) keeps its pace.
package final class MovableClock: Sendable {
    private let offset = Mutex<Double>(0)

    package init() {}

    package func now() -> Double {
        monotonic() + offset.withLock { $0 }
    }

    package func advance(by seconds: Double) {
        offset.withLock { $0 += seconds }
    }
}
