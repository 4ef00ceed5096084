import Synchronization

/// The resolver's counters for /metrics: lookups by result, cache answers by kind, and a histogram of
/// lookup latency. Cache answers are counted on the loops that ask (atomics); lookups on the resolver's
/// own loop.
package final class DNSMetrics: Sendable {
    /// Upper bounds of the latency histogram's buckets, in seconds.
    package static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// What one lookup (one name, one address family) sent to the resolver came to.
    package enum LookupResult: String, Sendable, CaseIterable {
        case success, nxdomain, nodata, timeout, failure
    }

    /// What the cache answered for one name and address family.
    package enum CacheResult: String, Sendable, CaseIterable {
        /// Fresh addresses.
        case hit
        /// A remembered NXDOMAIN or NODATA.
        case negative
        /// Expired addresses served because the refresh failed or was late (RFC 8767).
        case stale
        /// Nothing usable: a lookup was needed.
        case miss
    }

    package struct Snapshot: Sendable {
        package var lookups: [LookupResult: Int] = [:]
        package var cache: [CacheResult: Int] = [:]
        /// Per bucket of `DNSMetrics.buckets` (not cumulative), then the sum of seconds and the count.
        package var latency = [Int](repeating: 0, count: DNSMetrics.buckets.count)
        package var latencySum = 0.0
        package var latencyCount = 0
        /// Lookups waiting for the resolver now.
        package var inFlight = 0
        package var cacheEntries = 0
    }

    private let hits = Atomic<Int>(0)
    private let negatives = Atomic<Int>(0)
    private let stales = Atomic<Int>(0)
    private let misses = Atomic<Int>(0)
    private let lookups = Mutex(Snapshot())

    func count(_ result: CacheResult) {
        switch result {
        case .hit: hits.add(1, ordering: .relaxed)
        case .negative: negatives.add(1, ordering: .relaxed)
        case .stale: stales.add(1, ordering: .relaxed)
        case .miss: misses.add(1, ordering: .relaxed)
        }
    }

    func count(_ result: LookupResult, seconds: Double) {
        lookups.withLock { snapshot in
            snapshot.lookups[result, default: 0] += 1
            let bucket = DNSMetrics.buckets.firstIndex { seconds <= $0 }
            if let bucket { snapshot.latency[bucket] += 1 }
            snapshot.latencySum += seconds
            snapshot.latencyCount += 1
        }
    }

    func snapshot(inFlight: Int, cacheEntries: Int) -> Snapshot {
        var snapshot = lookups.withLock { $0 }
        snapshot.cache = [.hit: hits.load(ordering: .relaxed), .negative: negatives.load(ordering: .relaxed),
                          .stale: stales.load(ordering: .relaxed), .miss: misses.load(ordering: .relaxed)]
        snapshot.inFlight = inFlight
        snapshot.cacheEntries = cacheEntries
        return snapshot
    }
}
