import ATSPolicy
import Dispatch
import EventLoops
import Foundation
import POSIX
import Synchronization
import Testing
@testable import Inspection

/// The verdict cache's two stages (a chain judged on the CPU pool, and again with its caIssuers fetch on
/// the network pool only when an issuer is missing) and its lifetimes, on real pools and a real loop.
@Suite struct CertificateVerdictCacheTests {
    static let cpu = BlockingPool(threads: 1, name: "test.verdicts.cpu")
    static let network = BlockingPool(threads: 1, name: "test.verdicts.network")

    static func key(_ host: String) -> CertificateVerdictCache.Key {
        .init(host: host, address: nil, requirements: .full, pin: nil, chain: [[1, 2, 3]])
    }

    /// Runs `compute` (and `fetching`) through a fresh cache and waits for the verdict on a loop.
    static func verdict(_ cache: CertificateVerdictCache, _ key: CertificateVerdictCache.Key,
                        first: @escaping @Sendable () -> ServerJudgement,
                        fetching: (@Sendable () -> ServerJudgement)?) -> ServerJudgement? {
        // The cache is asked from a loop, as a connection asks it.
        nonisolated(unsafe) let loop = EventLoop(label: "test.verdicts.loop")
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<ServerJudgement?>(nil)
        loop.queue.async {
            cache.compute(key, on: cpu, compute: first,
                          fetchingIssuers: fetching.map { .init(pool: network, compute: $0) }, on: loop) { judgement in
                result.withLock { $0 = judgement }
                done.signal()
            }
        }
        _ = done.wait(timeout: .now() + 10)
        return result.withLock { $0 }
    }

    @Test func aChainThatLacksAnIssuerIsJudgedAgainWithTheFetchAndOnlyThen() throws {
        let cache = CertificateVerdictCache(capacity: 16, timeToLive: 300, counters: VerdictCounters())
        let stages = Mutex<[String]>([])
        var incomplete = ServerJudgement()
        incomplete.blocking = .init(reason: "certificate-untrusted", message: "no issuer", alert: .insufficientSecurity)
        incomplete.missingIssuerURLs = ["http://ca.example/int.cer"]
        var completed = ServerJudgement()
        completed.aiaFetched = "http://ca.example/int.cer"
        let result = Self.verdict(cache, Self.key("incomplete.example"),
                                  first: { [incomplete] in stages.withLock { $0.append("cpu") }; return incomplete },
                                  fetching: { [completed] in stages.withLock { $0.append("network") }; return completed })
        #expect(stages.withLock { $0 } == ["cpu", "network"])
        #expect(result?.blocking == nil && result?.aiaFetched == "http://ca.example/int.cer")
        #expect(cache.lookup(Self.key("incomplete.example"))?.aiaFetched == "http://ca.example/int.cer", "the fetched verdict is kept")

        stages.withLock { $0 = [] }
        let complete = Self.verdict(cache, Self.key("complete.example"),
                                    first: { stages.withLock { $0.append("cpu") }; return ServerJudgement() },
                                    fetching: { stages.withLock { $0.append("network") }; return ServerJudgement() })
        #expect(complete != nil)
        #expect(stages.withLock { $0 } == ["cpu"], "a complete chain never reaches the network pool")
    }

    @Test func aVerdictIsKeptNoLongerThanItAllows() throws {
        let cache = CertificateVerdictCache(capacity: 16, timeToLive: 300, counters: VerdictCounters())
        var failedFetch = ServerJudgement()
        failedFetch.blocking = .init(reason: "certificate-untrusted", message: "fetch failed", alert: .insufficientSecurity)
        failedFetch.maximumAge = 0
        _ = Self.verdict(cache, Self.key("failed.example"), first: { [failedFetch] in failedFetch }, fetching: nil)
        #expect(cache.lookup(Self.key("failed.example")) == nil, "asked again at once")
        _ = Self.verdict(cache, Self.key("good.example"), first: { ServerJudgement() }, fetching: nil)
        #expect(cache.lookup(Self.key("good.example")) != nil, "kept for --verdict-ttl")
    }

    @Test func aFailedProbeIsKeptBrieflyAndAnsweredAsAnEarlierProbesResult() throws {
        // A real probe of a loopback port nothing listens on (1, tcpmux): refused at once.
        let address = try #require(SocketAddress(parsing: "127.0.0.1:1"))
        let judge = ServerJudge(store: nil)
        let failed = judge.probe(address: address, port: 1, tunnel: nil, serverName: "down.example", host: "down.example",
                                 requirements: .full, pin: nil, timeout: 5)
        #expect(failed.blocking?.reason == "upstream-tls" && failed.failedProbe, "\(failed)")
        #expect(failed.maximumAge == ServerJudge.failedProbeLifetime)
        let message = try #require(failed.blocking?.message)
        let cache = CertificateVerdictCache(capacity: 16, timeToLive: 300, counters: VerdictCounters())
        let first = Self.verdict(cache, Self.key("down.example"), first: { failed }, fetching: nil)
        #expect(first?.blocking?.message == message, "the tunnel that asked gets the probe's own words")
        let cached = try #require(cache.lookup(Self.key("down.example"))?.blocking?.message)
        #expect(cached.hasPrefix(message + " (an earlier probe's result, 0 s ago;"), "\(cached)")
        #expect(cached.hasSuffix("the server is probed again after 5 s)"), "kept 5 s, not --verdict-ttl's 300: \(cached)")
    }
}
