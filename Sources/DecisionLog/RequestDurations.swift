/// How long requests took, for /metrics (`atsgate_request_duration_seconds{kind,action}`): one loop's
/// histogram, counted with every record (`LoopMetrics.count`, on the hot path: a bucket found among
/// fixed bounds and one array increment; no dictionary, no allocation).
///
/// What a request's duration is depends on its kind, so that each kind's quantiles mean something:
/// - `answer`: the proxy answered itself without reaching an origin (an ATS or access block, a DNS or
///   connect failure, the PAC file): from the request head to that answer.
/// - `forward`: a request carried to an origin (plain HTTP, or upgraded to TLS): from the head to the
///   end of the origin's response, as any HTTP server counts a request.
/// - `tunnel`: a CONNECT, from the head to the origin connected (or the parent's 200), which is what
///   the client waits for before its 200. Not the tunnel's life: that is the client's choice (an
///   HTTP/2 or WebSocket connection stays open for minutes), and one long tunnel would put every
///   quantile of its kind at the top bucket. The record's `duration_ms` keeps the whole life.
/// `action` (the record's, as in atsgate_decisions_total) splits what is fast by nature (a block is a
/// policy lookup) from what waits on the network (an `error` answer is often a timeout).
package struct RequestDurations {
    package enum Kind: Int, CaseIterable {
        case answer, forward, tunnel

        package var label: String {
            switch self {
            case .answer: "answer"
            case .forward: "forward"
            case .tunnel: "tunnel"
            }
        }
    }

    /// The record actions, in the order of their series.
    package static let actions = ["allow", "block", "upgrade", "error"]

    /// Upper bounds of the buckets, in seconds: a millisecond (a block) to a minute (a slow download);
    /// longer durations count in +Inf only.
    package static let bounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private static let slots = bounds.count + 1 // the last one counts what exceeds every bound
    private static let seriesCount = Kind.allCases.count * actions.count

    /// Per series (kind, then action), its buckets' counts (not cumulative; the last is over every bound).
    private var counts = [Int](repeating: 0, count: seriesCount * slots)
    /// Per series, the sum of its durations in seconds.
    private var sums = [Double](repeating: 0, count: seriesCount)

    package init() {}

    /// One series of the histogram, as the exposition format wants it.
    package struct Series {
        package var kind: Kind
        package var action: String
        /// Cumulative counts for each of `bounds`; `count` is the +Inf bucket.
        package var buckets: [(bound: Double, count: Int)]
        package var sum: Double
        package var count: Int
    }

    /// Counts one logged record.
    package mutating func count(_ record: DecisionRecord) {
        let kind: Kind
        let seconds: Double
        if let connected = record.connectedAfter {
            kind = record.method == "CONNECT" ? .tunnel : .forward
            seconds = kind == .tunnel ? connected : record.durationMilliseconds / 1000
        } else {
            kind = .answer
            seconds = record.durationMilliseconds / 1000
        }
        let action: Int
        switch record.action {
        case .allow?: action = 0
        case .block?: action = 1
        case .upgrade?: action = 2
        case .error?: action = 3
        case nil:
            switch record.decision?.action {
            case .block?: action = 1
            case .upgrade?: action = 2
            case .allow?, nil: action = 0
            }
        }
        observe(seconds, series: kind.rawValue * Self.actions.count + action)
    }

    private mutating func observe(_ seconds: Double, series: Int) {
        var slot = 0
        while slot < Self.bounds.count, seconds > Self.bounds[slot] { slot += 1 }
        counts[series * Self.slots + slot] += 1
        sums[series] += seconds
    }

    package mutating func add(_ other: RequestDurations) {
        for index in counts.indices { counts[index] += other.counts[index] }
        for index in sums.indices { sums[index] += other.sums[index] }
    }

    /// The series that have counted anything, by kind then action.
    package var series: [Series] {
        var out: [Series] = []
        for kind in Kind.allCases {
            for (actionIndex, action) in Self.actions.enumerated() {
                let series = kind.rawValue * Self.actions.count + actionIndex
                let slots = counts[(series * Self.slots)..<((series + 1) * Self.slots)]
                let total = slots.reduce(0, +)
                if total == 0 { continue }
                var running = 0
                let buckets = zip(Self.bounds, slots).map { bound, count in
                    running += count
                    return (bound: bound, count: running)
                }
                out.append(Series(kind: kind, action: action, buckets: buckets, sum: sums[series], count: total))
            }
        }
        return out
    }
}
