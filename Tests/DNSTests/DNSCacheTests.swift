import ATSPolicy
import Testing
@testable import DNS

/// The cache's lifetimes: fresh until the (clamped) TTL, stale until the stale limit, negative for its
/// own short time; and its bound.
@Suite struct DNSCacheTests {
    let key = DNSCache.Key(name: "api.example.com", family: .v4)

    @Test func anAnswerIsFreshUntilItsTTLThenStaleThenGone() {
        let cache = DNSCache()
        cache.store(key, addresses: [.v4(0x0A00_0001)], ttl: 30, stale: 100, capacity: 10, at: 1000)
        guard case .fresh(let addresses) = cache.lookup(key, at: 1029) else { Issue.record("not fresh"); return }
        #expect(addresses == [.v4(0x0A00_0001)])
        guard case .stale(_, let expiredFor) = cache.lookup(key, at: 1040) else { Issue.record("not stale"); return }
        #expect(expiredFor == 10)
        guard case .miss = cache.lookup(key, at: 1131) else { Issue.record("still there"); return }
        #expect(cache.count == 0)
    }

    @Test func aNegativeAnswerIsRememberedForItsOwnTimeOnly() {
        let cache = DNSCache()
        cache.store(key, negative: LookupFailure(.nxdomain, "no such name"), ttl: 5, capacity: 10, at: 1000)
        guard case .negative(let failure) = cache.lookup(key, at: 1004) else { Issue.record("not negative"); return }
        #expect(failure.kind == .nxdomain)
        guard case .miss = cache.lookup(key, at: 1005) else { Issue.record("still negative"); return }
        cache.store(key, negative: LookupFailure(.noData, "no A"), ttl: 0, capacity: 10, at: 1000)
        guard case .miss = cache.lookup(key, at: 1000) else { Issue.record("a zero negative TTL keeps nothing"); return }
    }

    @Test func theCacheStaysWithinItsCapacity() {
        let cache = DNSCache()
        for index in 0..<100 {
            cache.store(DNSCache.Key(name: "n\(index).example", family: .v6), addresses: [.v6(UInt128(index))],
                        ttl: Double(index + 1), stale: 0, capacity: 40, at: 0)
        }
        #expect(cache.count <= 40)
        // The newest stays; the oldest went first.
        guard case .fresh = cache.lookup(DNSCache.Key(name: "n99.example", family: .v6), at: 0) else {
            Issue.record("the newest entry was evicted")
            return
        }
    }

    @Test(arguments: [(0, 1.0), (30, 30), (99_999, 3600)])
    func ttlsAreClampedIntoTheConfiguredRange(ttl: Int, kept: Double) {
        var settings = ResolverSettings()
        settings.minimumTTL = 1
        settings.maximumTTL = 3600
        #expect(settings.clamped(ttl: ttl) == kept)
    }
}
