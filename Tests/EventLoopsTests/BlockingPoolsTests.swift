import Foundation
import Testing
@testable import EventLoops

/// Each kind of blocking work has its own pool: with every probe thread held up (a slow origin) and
/// more probes queued, a password check and a certificate evaluation still run at once, and the
/// queue lengths /metrics shows say where the work waits.
@Suite(.serialized) struct BlockingPoolsTests {
    @Test func slowProbesDelayNeitherPasswordsNorCertificates() {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchGroup()
        // Four threads held, and four more probes waiting behind them.
        for index in 0..<8 {
            if index < 4 { started.enter() }
            BlockingPools.probes.submit {
                if index < 4 { started.leave() }
                release.wait()
            }
        }
        #expect(started.wait(timeout: .now() + 10) == .success)
        let backlogs = Dictionary(uniqueKeysWithValues: BlockingPools.backlogs.map { ($0.pool, $0.waiting) })
        #expect(backlogs["probes"] == 4)
        let password = DispatchSemaphore(value: 0)
        let certificate = DispatchSemaphore(value: 0)
        BlockingPools.passwords.submit { password.signal() }
        BlockingPools.certificates.submit { certificate.signal() }
        #expect(password.wait(timeout: .now() + 10) == .success, "a password check waited for the probes")
        #expect(certificate.wait(timeout: .now() + 10) == .success, "a certificate evaluation waited for the probes")
        for _ in 0..<8 { release.signal() }
        let deadline = Date().addingTimeInterval(10)
        while BlockingPools.probes.backlog > 0, Date() < deadline { usleep(10_000) }
        #expect(BlockingPools.probes.backlog == 0)
    }
}
