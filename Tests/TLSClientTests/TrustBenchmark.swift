import ATSPolicy
import Foundation
import Testing
import TLSClient

/// Not a test of behaviour: the timings of issue 31's report (trust store load, evaluation with CT off
/// and on), printed, never asserted. Runs only with ATSGATE_BENCHMARK=1: scripts/benchmark-trust.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ATSGATE_BENCHMARK"] == "1"))
struct TrustBenchmark {
    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func measure(_ runs: Int, _ body: () throws -> Void) rethrows -> (median: Double, minimum: Double) {
        var samples: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            try body()
            samples.append(milliseconds(start.duration(to: .now)))
        }
        samples.sort()
        return (samples[samples.count / 2], samples[0])
    }

    @Test func storeLoadAndEvaluationCost() throws {
        let apple = try Self.measure(21) { _ = try TrustStore(.apple) }
        let system = try Self.measure(21) { _ = try TrustStore(.system) }
        let directory = try Self.measure(21) { _ = try TrustStore(.directory(try TestTrustStore.storePath())) }
        print("trust-benchmark: load apple median \(apple.median) ms min \(apple.minimum) ms;"
              + " system median \(system.median) ms; test directory median \(directory.median) ms")

        let store = try TestTrustStore.store()
        let chain = try TestTrustStore.chain("leaf-good")
        let transparency = try #require(store.defaultTransparency)
        let now = Date()
        let count = 2000
        func run(_ check: TransparencyCheck?) -> Double {
            let start = ContinuousClock.now
            for _ in 0..<count {
                let verdict = CertificateEvaluator.evaluate(chain: chain, host: "localhost", requirements: .full, pin: nil,
                                                            store: store, now: now, transparency: check)
                precondition(verdict.blockingFinding == nil)
            }
            return Self.milliseconds(start.duration(to: .now)) * 1000 / Double(count)
        }
        _ = run(transparency)
        let off = run(nil), on = run(transparency), offAgain = run(nil), onAgain = run(transparency)
        print("trust-benchmark: evaluation of a 3-certificate chain, CT off \((off + offAgain) / 2) µs,"
              + " CT on (2 embedded SCTs verified) \((on + onAgain) / 2) µs")
    }
}
