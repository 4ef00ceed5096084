import Foundation

/// Whether a series grows without bound: a least-squares line through the samples of the run's
/// second half (the first half is warm-up: caches fill, the allocator and the thread pool find
/// their size), judged by the lower end of its slope's two-standard-error band. Load makes every
/// series move; a series grows only when even the low end of the band climbs faster than its
/// floor, and the line rises over the half by more than one step a bounded pool can take (a thread
/// Dispatch adds once is a step, not a climb: with so little noise its band alone is narrow enough
/// to convict it). A short run has a wide band and cannot convict; a long one narrows it.
struct Trend {
    let name: String
    let unit: String
    /// Growth per minute below which a series counts as flat, and why that much.
    let floor: Double
    /// The least rise over the second half that counts (the size of a bounded step).
    let step: Double
    let why: String
    let points: [(time: Double, value: Double)]

    /// Slope per minute, its standard error, and the line's value at the half's start.
    var fit: (slope: Double, error: Double, intercept: Double)? {
        guard points.count >= 3 else { return nil }
        let n = Double(points.count)
        let minutes = points.map { $0.time / 60 }
        let values = points.map(\.value)
        let meanT = minutes.reduce(0, +) / n
        let meanV = values.reduce(0, +) / n
        let sxx = minutes.reduce(0) { $0 + ($1 - meanT) * ($1 - meanT) }
        guard sxx > 0 else { return nil }
        let sxy = zip(minutes, values).reduce(0) { $0 + ($1.0 - meanT) * ($1.1 - meanV) }
        let slope = sxy / sxx
        let intercept = meanV - slope * meanT
        let residual = zip(minutes, values).reduce(0) { sum, point in
            let error = point.1 - (intercept + slope * point.0)
            return sum + error * error
        }
        let error = (residual / max(1, n - 2) / sxx).squareRoot()
        return (slope, error, intercept)
    }

    /// How much the fitted line rises from the half's first sample to its last.
    var rise: Double? {
        guard let fit, let first = points.first, let last = points.last else { return nil }
        return fit.slope * (last.time - first.time) / 60
    }

    /// Grows: the slope's lower bound (slope - 2 standard errors) is above the floor, and the line
    /// rises by more than a step.
    var grows: Bool {
        guard let fit, let rise else { return false }
        return fit.slope - 2 * fit.error > floor && rise > step
    }

    var verdict: String {
        guard let fit, let rise else { return "too few samples in the second half to tell" }
        let band = String(format: "%+.3g +- %.2g %@/min, %+.3g over the half", fit.slope, 2 * fit.error, unit, rise)
        let limits = "floor \(format(floor)) \(unit)/min and a rise of \(format(step))"
        return grows ? "GROWS: \(band), above the \(limits)" : "flat: \(band) (\(limits))"
    }

    private func format(_ value: Double) -> String { String(format: "%.3g", value) }

    /// The series the soak judges, over the samples taken at or after `from` seconds.
    static func all(_ samples: [Sample], from: Double) -> [Trend] {
        let half = samples.filter { $0.time >= from }
        func series(_ value: (Sample) -> Double?) -> [(time: Double, value: Double)] {
            half.compactMap { sample in value(sample).map { (sample.time, $0) } }
        }
        let p99s = half.compactMap(\.p99).sorted()
        let typicalP99 = p99s.isEmpty ? 0 : p99s[p99s.count / 2]
        return [
            Trend(name: "descriptors", unit: "fds", floor: 1, step: 8,
                  why: "a leak of one a minute exhausts a 10,000 limit in a week of lab use; 8 is the pool and a few exchanges in flight",
                  points: series { Double($0.descriptors) }),
            Trend(name: "RSS", unit: "MiB", floor: 0.5, step: 4,
                  why: "half a MiB a minute is 5 GiB a week; 4 MiB is what a reload's second generation of policies and trust store took",
                  points: series { Double($0.rssKiB) / 1024 }),
            Trend(name: "threads", unit: "threads", floor: 0.2, step: 2,
                  why: "Dispatch's pool grows and shrinks with load (a step of one or two), but a thread every five minutes is a leak",
                  points: series { Double($0.threads) }),
            Trend(name: "CLOSE_WAIT", unit: "sockets", floor: 0.2, step: 2,
                  why: "a socket the peer closed and the daemon kept; one or two in passing, never a climb",
                  points: series { Double($0.closeWait) }),
            Trend(name: "p99 latency", unit: "ms", floor: max(5, 0.05 * typicalP99), step: max(20, 0.2 * typicalP99),
                  why: "5 ms or 5% of the typical p99 a minute, and 20 ms or 20% in all: queueing that builds up, not the noise of a shared machine",
                  points: series { $0.p99 }),
            Trend(name: "errors", unit: "per interval", floor: 0.5, step: 5,
                  why: "load requests that did not end as expected; a few under the descriptor burst, never a rising rate",
                  points: series { Double($0.errors) }),
        ]
    }
}
