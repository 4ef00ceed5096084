import DNS

extension CachingResolver {
    /// The resolver's counters as /metrics shows them (cumulative histogram buckets).
    var gauges: ResolverGauges {
        let snapshot = self.snapshot
        var gauges = ResolverGauges()
        gauges.lookups = DNSMetrics.LookupResult.allCases.map { ($0.rawValue, snapshot.lookups[$0] ?? 0) }
        gauges.cache = DNSMetrics.CacheResult.allCases.map { ($0.rawValue, snapshot.cache[$0] ?? 0) }
        var running = 0
        gauges.latency = zip(DNSMetrics.buckets, snapshot.latency).map { bound, count in
            running += count
            return (bound, running)
        }
        gauges.latencySum = snapshot.latencySum
        gauges.latencyCount = snapshot.latencyCount
        gauges.inFlight = snapshot.inFlight
        gauges.cacheEntries = snapshot.cacheEntries
        return gauges
    }
}
