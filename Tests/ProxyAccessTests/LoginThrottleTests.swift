import ATSPolicy
import Testing
@testable import ProxyAccess

/// Failed logins per client address (LoginThrottle) on a clock the test moves: free attempts, growing
/// delays, refusal with a Retry-After, draining, other addresses untouched, and the table's bound.
@Suite struct LoginThrottleTests {
    static let guesser = IPAddress.v4(0xC612_0002)
    static let device = IPAddress.v4(0xC612_0003)

    @Test func freeAttemptsThenGrowingDelaysThenRefusal() {
        let throttle = LoginThrottle()
        let admissions = (0..<12).map { _ in throttle.admit(Self.guesser, now: 100) }
        #expect(admissions == [
            .proceed(delay: 0), .proceed(delay: 0), .proceed(delay: 0), .proceed(delay: 0.25), .proceed(delay: 0.5),
            .proceed(delay: 1), .proceed(delay: 2), .proceed(delay: 4), .proceed(delay: 4), .proceed(delay: 4),
            .refuse(retryAfter: 30), .refuse(retryAfter: 30),
        ])
        #expect(throttle.refusal(Self.guesser, now: 100) == 30)
        // Another address is not slowed at all.
        #expect(throttle.admit(Self.device, now: 100) == .proceed(delay: 0))
        #expect(throttle.refusal(Self.device, now: 100) == nil)
    }

    @Test func theBucketDrainsOneAttemptPerLeak() {
        let throttle = LoginThrottle()
        for _ in 0..<10 { _ = throttle.admit(Self.guesser, now: 0) }
        #expect(throttle.refusal(Self.guesser, now: 10) == 20)
        #expect(throttle.refusal(Self.guesser, now: 29) == 1)
        #expect(throttle.refusal(Self.guesser, now: 30) == nil)
        #expect(throttle.admit(Self.guesser, now: 30) == .proceed(delay: 4))
        #expect(throttle.admit(Self.guesser, now: 30) == .refuse(retryAfter: 30))
        #expect(throttle.admit(Self.guesser, now: 10_000) == .proceed(delay: 0), "drained after a long quiet")
    }

    @Test func aRightPasswordTakesItsAttemptBack() {
        let throttle = LoginThrottle()
        for _ in 0..<50 {
            #expect(throttle.admit(Self.device, now: 5) == .proceed(delay: 0))
            throttle.succeeded(Self.device, now: 5)
        }
        #expect(throttle.count == 0, "an address with nothing counted is not kept")
    }

    @Test func ipv6ClientsCountPerSlash64AndMappedOnesAsIPv4() {
        let throttle = LoginThrottle()
        let prefix: UInt128 = 0x2001_0DB8_0000_0001 << 64
        for host in 0..<10 { _ = throttle.admit(.v6(prefix | UInt128(host)), now: 0) }
        #expect(throttle.admit(.v6(prefix | 0xFFFF), now: 0) == .refuse(retryAfter: 30))
        #expect(throttle.admit(.v6(prefix + (1 << 64)), now: 0) == .proceed(delay: 0), "the next /64 is someone else")
        for _ in 0..<10 { _ = throttle.admit(.v6(0xFFFF_C612_0002), now: 0) }
        #expect(throttle.refusal(Self.guesser, now: 0) == 30)
    }

    @Test func theTableIsBoundedAndKeepsTheFullestBuckets() {
        var limits = LoginThrottle.Limits()
        limits.capacity = 64
        let throttle = LoginThrottle(limits: limits)
        for _ in 0..<10 { _ = throttle.admit(Self.guesser, now: 0) }
        for host in 0..<1000 { _ = throttle.admit(.v4(0x0A00_0000 + UInt32(host)), now: 1) }
        #expect(throttle.count <= 64)
        #expect(throttle.refusal(Self.guesser, now: 1) != nil, "a flood of other addresses does not evict the guesser")
    }
}
