/// Everything the logs said, grouped by app and destination. Memory follows the number of distinct
/// destinations (and minutes), not the number of records; the order records arrive in does not
/// matter, so logs of several proxies merge whatever their order.
public struct TrafficSummary: Sendable {
    public internal(set) var destinations: [DestinationTraffic] = []
    public internal(set) var inputs: [InputStats] = []
    public internal(set) var buckets = TimeBuckets()
    /// Records of the proxy's own answers that name no destination (bad requests, timeouts), per app.
    public internal(set) var undirected: [String: [String: Int]] = [:]
    /// The transparent gate's paths, per app and device.
    public internal(set) var paths = TransparentTraffic()
    /// The daemon runs the records name (the run ledger), in the order first read.
    public internal(set) var runs: [LoggedRun] = []

    public var records: Int { inputs.reduce(0) { $0 + $1.records } }
    public var apps: [String] { Array(Set(destinations.map(\.app))).sorted() }
    /// The logs hold run ledger records (a daemon that keeps the ledger wrote them).
    public var hasLedger: Bool { runs.contains(where: \.hasLedger) }

    public init() {}

    /// Adds `other`'s records to this summary (destinations by app, scheme, host and port).
    package mutating func merge(_ other: TrafficSummary) {
        inputs += other.inputs
        for (minute, counts) in other.buckets.minutes {
            buckets.minutes[minute] = buckets.minutes[minute].map { zip($0, counts).map(+) } ?? counts
        }
        paths.merge(other.paths)
        for (app, reasons) in other.undirected {
            undirected[app, default: [:]].merge(reasons, uniquingKeysWith: +)
        }
        for run in other.runs {
            if let index = runs.firstIndex(where: { $0.id == run.id }) { runs[index].merge(run) } else { runs.append(run) }
        }
        if destinations.isEmpty { destinations = other.destinations; return }
        var index: [String: Int] = [:]
        for (position, destination) in destinations.enumerated() { index[destination.key] = position }
        for destination in other.destinations {
            guard let position = index[destination.key] else {
                index[destination.key] = destinations.count
                destinations.append(destination)
                continue
            }
            destinations[position].merge(destination)
        }
    }

    /// `TrafficSummaryBuilder.finish()`'s result, its tables already sorted and flushed.
    package init(destinations: [DestinationTraffic], inputs: [InputStats], buckets: TimeBuckets,
         undirected: [String: [String: Int]], paths: TransparentTraffic = TransparentTraffic(), runs: [LoggedRun] = []) {
        self.destinations = destinations
        self.inputs = inputs
        self.buckets = buckets
        self.undirected = undirected
        self.paths = paths
        self.runs = runs
    }
}
