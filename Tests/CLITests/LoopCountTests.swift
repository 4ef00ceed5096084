import Foundation
import Testing
import TestSupport

/// The number of event loops: one per CPU the process may use, said at start with its reason, and
/// `--loops` (or the config key `loops`) over it. The real binary, under `taskset`.
@Suite(.serialized) struct LoopCountTests {
    private func loopLine(_ daemon: Daemon) -> String {
        daemon.process.stderr.split(separator: "\n").first { $0.contains("event loop") }.map(String.init) ?? ""
    }

    /// Pinned to CPU 0, the daemon runs one loop and says the affinity mask decided; it serves.
    @Test func pinnedToOneCPUItRunsOneLoop() throws {
        let origin = try Origin()
        let daemon = try Daemon([], launcher: ["/usr/bin/taskset", "-c", "0"])
        let line = loopLine(daemon)
        #expect(line.hasPrefix("atsgate: 1 event loop: "), "\(line)")
        if ProcessInfo.processInfo.processorCount > 1 {
            #expect(line.contains("affinity mask: 1 of \(ProcessInfo.processInfo.processorCount) online"), "\(line)")
        }
        let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
        #expect(run.stdout == String(repeating: "a", count: 100), "\(run.stderr)")
        let (status, records) = try daemon.stop()
        #expect(status == 0)
        #expect(records.first?["action"] as? String == "allow")
    }

    /// With every CPU allowed (and no quota below that), one loop per CPU this process may use.
    @Test func unpinnedItRunsOneLoopPerAllowedCPU() throws {
        let cpus = (0..<ProcessInfo.processInfo.processorCount).map(String.init).joined(separator: ",")
        let daemon = try Daemon([], launcher: ["/usr/bin/taskset", "-c", cpus])
        let line = loopLine(daemon)
        let count = try #require(line.firstMatch(of: #/atsgate: (\d+) event loops?: /#).flatMap { Int($0.1) }, "\(line)")
        #expect(count >= 1 && count <= ProcessInfo.processInfo.processorCount, "\(line)")
        if line.contains("cgroup") { #expect(line.contains("cpu.max")) } else {
            #expect(count == ProcessInfo.processInfo.processorCount, "\(line)")
        }
        _ = try daemon.stop(expected: 0)
    }

    @Test func theFlagAndTheConfigKeyOverrideIt() throws {
        let flagged = try Daemon(["--loops", "3"], launcher: ["/usr/bin/taskset", "-c", "0"])
        #expect(loopLine(flagged) == "atsgate: 3 event loops: as configured (--loops)")
        _ = try flagged.stop(expected: 0)

        let directory = try TemporaryDirectory()
        let config = directory.url.appendingPathComponent("atsgate.conf")
        try "loops = 2\n".write(to: config, atomically: true, encoding: .utf8)
        let configured = try Daemon(["--config", config.path])
        #expect(loopLine(configured) == "atsgate: 2 event loops: as configured (--loops)")
        _ = try configured.stop(expected: 0)
    }

    /// A client that opens its keep-alive connections all at once (a device's pool, wrk's 32) gets
    /// them spread over the loops: whichever loop woke first used to take the whole backlog, and
    /// then ran out of CPU while the others idled. /metrics shows each loop's share.
    @Test func connectionsOpenedTogetherSpreadOverTheLoops() throws {
        let origin = try Origin()
        let daemon = try Daemon(["--loops", "2", "--admin", "127.0.0.1:0"])
        let clients = try (0..<24).map { _ in try RawClient(port: daemon.port) }
        let request = "GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: 127.0.0.1:\(origin.httpPort)\r\n\r\n"
        for client in clients { client.send(request) }
        for client in clients {
            #expect(client.read(until: String(repeating: "a", count: 100)).hasPrefix("HTTP/1.1 200"))
        }
        let metrics = try daemon.admin("/metrics")
        func perLoop(_ name: String) -> [Int] {
            (0..<2).compactMap { loop in
                metrics.firstMatch(of: try! Regex("\(name)\\{loop=\"\(loop)\"\\} (\\d+)\n"))
                    .flatMap { Int($0.output[1].substring ?? "") }
            }
        }
        let open = perLoop("atsgate_loop_connections_open")
        #expect(open.count == 2 && open.reduce(0, +) == 24, "\(metrics)")
        // At most the balancing slack apart (4, and a quarter of the larger share: 16 to 8 at
        // worst), never 24 to 0; one more for two loops that accept at the same moment.
        if let low = open.min(), let high = open.max() {
            #expect(high - low <= 4 + high / 4 + 1, "open per loop: \(open)")
            #expect(low >= 7, "open per loop: \(open)")
        }
        #expect(perLoop("atsgate_loop_connections_accepted_total").reduce(0, +) == 24, "\(metrics)")
        for client in clients { client.close() }
        _ = try daemon.stop(expected: 24)
    }

    @Test(arguments: ["0", "-1", "1025"])
    func anImpossibleCountIsRefused(count: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--loops", count])
        #expect(run.status != 0)
        #expect(run.stderr.contains("--loops"), "\(run.stderr)")
    }
}
