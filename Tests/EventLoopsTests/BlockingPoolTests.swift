import Foundation
import Synchronization
import Testing
@testable import EventLoops

/// Blocking work runs on a fixed number of threads, in order of submission, and all of it runs.
@Suite struct BlockingPoolTests {
    @Test func aBurstOfBlockingWorkStaysOnTheFixedThreads() async throws {
        let pool = BlockingPool(threads: 3, name: "test.pool")
        let seen = Mutex<(threads: Set<UInt>, done: Int, running: Int, peak: Int)>(([], 0, 0, 0))
        let group = DispatchGroup()
        for _ in 0..<40 {
            group.enter()
            pool.submit {
                seen.withLock {
                    $0.threads.insert(UInt(pthread_self()))
                    $0.running += 1
                    $0.peak = max($0.peak, $0.running)
                }
                usleep(2_000) // a lookup that blocks
                seen.withLock {
                    $0.running -= 1
                    $0.done += 1
                }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success)
        let result = seen.withLock { $0 }
        #expect(result.done == 40)
        #expect(result.peak <= 3)
        #expect(result.threads.count <= 3, "the work ran on the pool's threads only")
        #expect(pool.backlog == 0)
    }
}
