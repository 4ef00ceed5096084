import ATSPolicy
import EventLoops
import Foundation
import POSIX
import Synchronization
import Testing
import TestSupport
@testable import DNS

/// The resolver against the tests' own DNS server (c-ares pointed at it, the system's resolver
/// untouched): one lookup per name however many wait, no thread per lookup, the cache's lifetimes,
/// stale answers when the server fails, and the deadline.
@Suite(.serialized) struct CachingResolverTests {
    /// The loop the lookups are asked from. Loops and resolvers live as long as the process, as the
    /// daemon's do (an event loop's clock and poller are never torn down).
    nonisolated(unsafe) static let waiterLoop = EventLoop(label: "dns-tests")
    static let resolvers = Mutex<[CachingResolver]>([])

    /// A resolver on the tests' server, with the settings the test changes.
    func resolver(_ server: DNSTestServer, _ change: (inout ResolverSettings) -> Void = { _ in }) -> CachingResolver {
        var settings = ResolverSettings()
        settings.servers = [SocketAddress(parsing: server.address)!]
        change(&settings)
        let resolver = CachingResolver()
        resolver.configure(settings)
        Self.resolvers.withLock { $0.append(resolver) }
        return resolver
    }

    /// Resolves one family of `name` from a loop of the test's and waits (bounded) for the answer.
    func resolve(_ resolver: CachingResolver, _ name: String, _ family: AddressFamily = .v4, on loop: EventLoop)
        -> Resolution? {
        let answer = Mutex<Resolution?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            resolver.resolve(name, family, on: loop) { resolution in
                answer.withLock { $0 = resolution }
                done.signal()
            }
        }
        guard done.wait(timeout: .now() + 15) == .success else { return nil }
        return answer.withLock { $0 }
    }

    @Test func everyWaiterSharesOneLookup() throws {
        let server = try DNSTestServer(zone: ["slow.test": ["A": ["10.0.0.1"], "delay": 0.5]])
        let resolver = resolver(server)
        let loop = Self.waiterLoop
        let answers = Mutex<[Resolution]>([])
        let group = DispatchGroup()
        for _ in 0..<50 {
            group.enter()
            loop.execute {
                resolver.resolve("slow.test", .v4, on: loop) { resolution in
                    answers.withLock { $0.append(resolution) }
                    group.leave()
                }
            }
        }
        #expect(group.wait(timeout: .now() + 15) == .success)
        let all = answers.withLock { $0 }
        #expect(all.count == 50)
        #expect(all.allSatisfy { (try? $0.result.get()) == [.v4(0x0A00_0001)] })
        #expect(all.allSatisfy { $0.lookupMilliseconds != nil }, "they all waited for the one lookup")
        #expect(server.queries("slow.test", type: "A") == 1)
        // Then from the cache, without asking.
        let cached = try #require(resolve(resolver, "slow.test", on: loop))
        #expect(cached.source == .cache)
        #expect(server.queries("slow.test", type: "A") == 1)
    }

    @Test func lookupsInFlightTakeNoThreadEach() throws {
        let server = try DNSTestServer(zone: ["*.slow.test": ["A": ["10.0.0.2"], "delay": 2]])
        let resolver = resolver(server)
        let loop = Self.waiterLoop
        _ = resolve(resolver, "warm.slow.test", on: loop) // the resolver's loop and sockets exist
        let before = try threadCount()
        let pending = Atomic<Int>(200)
        for index in 0..<200 {
            loop.execute {
                resolver.resolve("n\(index).slow.test", .v4, on: loop) { _ in pending.subtract(1, ordering: .relaxed) }
            }
        }
        let deadline = Date().addingTimeInterval(10)
        while server.queries("n199.slow.test") == 0, Date() < deadline { usleep(20_000) }
        let during = try threadCount()
        #expect(pending.load(ordering: .relaxed) > 0, "the lookups are still in flight")
        #expect(resolver.snapshot.inFlight > 100)
        #expect(during - before < 10, "200 lookups in flight took \(during - before) threads")
        while pending.load(ordering: .relaxed) > 0, Date() < deadline.addingTimeInterval(10) { usleep(20_000) }
        #expect(pending.load(ordering: .relaxed) == 0)
    }

    @Test func anExpiredAnswerIsServedStaleWhenTheServerFails() throws {
        let server = try DNSTestServer(zone: ["flaky.test": ["A": ["10.0.0.3"], "ttl": 1]])
        let resolver = resolver(server) { $0.minimumTTL = 0; $0.timeout = 3 }
        let loop = Self.waiterLoop
        #expect(try #require(resolve(resolver, "flaky.test", on: loop)).lookupMilliseconds != nil)
        try server.setZone(["flaky.test": ["mode": "servfail"]])
        usleep(1_200_000)
        let stale = try #require(resolve(resolver, "flaky.test", on: loop))
        #expect(stale.isStale)
        #expect((try? stale.result.get()) == [.v4(0x0A00_0003)])
        #expect(resolver.snapshot.cache[.stale] == 1)
        #expect(server.queries("flaky.test", type: "A") >= 2, "the refresh was asked for")
    }

    @Test func aLateRefreshIsAnsweredStaleBeforeTheDeadline() throws {
        let server = try DNSTestServer(zone: ["late.test": ["A": ["10.0.0.4"], "ttl": 1]])
        let resolver = resolver(server) { $0.minimumTTL = 0; $0.timeout = 8; $0.staleAnswerDelay = 0.3 }
        let loop = Self.waiterLoop
        _ = resolve(resolver, "late.test", on: loop)
        try server.setZone(["late.test": ["mode": "never"]])
        usleep(1_200_000)
        let started = Date()
        let stale = try #require(resolve(resolver, "late.test", on: loop))
        #expect(stale.isStale)
        #expect(Date().timeIntervalSince(started) < 8, "answered before --dns-timeout, from the stale answer")
    }

    @Test func withoutAStaleAnswerTheDeadlineIsATimeout() throws {
        let server = try DNSTestServer(zone: ["never.test": ["mode": "never"]])
        let resolver = resolver(server) { $0.timeout = 1 }
        let loop = Self.waiterLoop
        let answer = try #require(resolve(resolver, "never.test", on: loop))
        guard case .failure(let failure) = answer.result else { Issue.record("an answer came"); return }
        #expect(failure.kind == .timeout)
        #expect(failure.message.contains("--dns-timeout"))
        #expect(resolver.snapshot.lookups[.timeout] == 1)
    }

    @Test func aStaleLimitOfZeroServesNothingStale() throws {
        let server = try DNSTestServer(zone: ["flaky.test": ["A": ["10.0.0.3"], "ttl": 1]])
        let resolver = resolver(server) { $0.minimumTTL = 0; $0.staleLimit = 0 }
        let loop = Self.waiterLoop
        _ = resolve(resolver, "flaky.test", on: loop)
        try server.setZone(["flaky.test": ["mode": "servfail"]])
        usleep(1_200_000)
        let answer = try #require(resolve(resolver, "flaky.test", on: loop))
        guard case .failure(let failure) = answer.result else { Issue.record("served stale"); return }
        #expect(failure.kind == .failure)
    }

    @Test func negativeAnswersAreRememberedAndTTLsClamped() throws {
        let server = try DNSTestServer(zone: ["long.test": ["A": ["10.0.0.5"], "ttl": 3600]])
        let resolver = resolver(server) { $0.maximumTTL = 1; $0.negativeTTL = 30 }
        let loop = Self.waiterLoop
        for _ in 0..<2 {
            let answer = try #require(resolve(resolver, "missing.test", on: loop))
            guard case .failure(let failure) = answer.result else { Issue.record("missing.test resolved"); return }
            #expect(failure.kind == .nxdomain)
        }
        #expect(server.queries("missing.test", type: "A") == 1, "NXDOMAIN is remembered")
        // The negative lifetime never exceeds --dns-max-ttl: after a second it is asked again.
        usleep(1_100_000)
        _ = resolve(resolver, "missing.test", on: loop)
        #expect(server.queries("missing.test", type: "A") == 2)
        _ = resolve(resolver, "long.test", on: loop)
        usleep(1_100_000)
        _ = resolve(resolver, "long.test", on: loop)
        #expect(server.queries("long.test", type: "A") == 2, "a TTL of an hour is held to --dns-max-ttl")
    }

    @Test func noDataIsNotNXDomain() throws {
        let server = try DNSTestServer(zone: ["v4only.test": ["A": ["10.0.0.6"], "AAAA": []]])
        let resolver = resolver(server)
        let loop = Self.waiterLoop
        let v6 = try #require(resolve(resolver, "v4only.test", .v6, on: loop))
        guard case .failure(let failure) = v6.result else { Issue.record("an AAAA answer"); return }
        #expect(failure.kind == .noData)
        let v4 = try #require(resolve(resolver, "v4only.test", .v4, on: loop))
        #expect((try? v4.result.get()) == [.v4(0x0A00_0006)])
    }

    private func threadCount() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count
    }
}
