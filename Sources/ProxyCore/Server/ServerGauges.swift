import DecisionLog

/// Server-wide values that are not per loop, read at scrape time.
package struct ServerGauges {
    package var connectionsOpen: Int
    package var generation: Int
    package var reloadsSucceeded: Int
    package var reloadsFailed: Int
    package var lastReloadTime: Double
    package var draining: Bool
    package var probeCache: [String: Int]
    package var version: String
    /// The decision log's buffer and losses (defaults: a log that never filled).
    package var log = LogState(bufferedBytes: 0, capacity: LogSink.defaultCapacity, overflow: .drop, droppedTotal: 0,
                               cause: "", failure: nil, paused: false, pauses: 0, output: "standard output")
    /// The resolver's counters.
    package var resolver = ResolverGauges()
    /// Every parent the configuration names (`--parent` and routes'), and whether it is up (not
    /// passed over after a failure).
    package var parents: [(parent: String, up: Bool)] = []
    /// Work waiting for each blocking pool (certificates, probes, passwords).
    package var blockingQueues: [(pool: String, waiting: Int)] = []
    /// The trust store new connections are judged against (`--trust-store`).
    package var trustStore = (name: "system", version: "host")
}

/// The resolver's counters for /metrics, in ProxyCore's words (the Admin target sees no DNS types).
package struct ResolverGauges {
    /// Lookups sent to the resolver (per name and address family), by result.
    package var lookups: [(result: String, count: Int)] = []
    /// Cache answers per name and address family: hit, negative, stale (served on a failure), miss.
    package var cache: [(result: String, count: Int)] = []
    /// The lookup latency histogram: (upper bound in seconds, cumulative count), then sum and count.
    package var latency: [(bound: Double, count: Int)] = []
    package var latencySum = 0.0
    package var latencyCount = 0
    package var inFlight = 0
    package var cacheEntries = 0
}
