import Foundation
import Glibc
import Testing
import TestSupport

/// SIGUSR2 and `atsgate upgrade` on the real daemon, started from a copy of the binary in a directory
/// of its own; the test replaces that file as dpkg does (a new file written beside it and renamed
/// over it) before each upgrade. What must hold: no byte of a tunnel lost, repeated or moved, no new
/// connection refused, every connection logged once with the bytes both processes moved, and a
/// broken binary changing nothing but a counter and a message.
@Suite(.serialized) struct UpgradeTests {
    /// The daemon, its binary's path, its pid file and its ports.
    final class UpgradableDaemon {
        let directory: TemporaryDirectory
        let binary: String
        let pidFile: String
        let process: BackgroundProcess
        let port: Int
        let adminPort: Int

        init(_ arguments: [String], environment: [String: String]? = nil, standardOutput: FileHandle? = nil) throws {
            directory = try TemporaryDirectory()
            let bin = directory.url.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            binary = bin.appendingPathComponent("atsgate").path
            try FileManager.default.copyItem(atPath: Atsgate.binary.path, toPath: binary)
            pidFile = directory.url.appendingPathComponent("atsgate.pid").path
            process = try BackgroundProcess(binary, ["run", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
                                                     "--pid-file", pidFile] + arguments,
                                            environment: environment, standardOutput: standardOutput)
            try process.wait { _, err in err.contains("listening on ") }
            let line = process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
            guard let match = line.firstMatch(of: /listening on 127\.0\.0\.1:(\d+).*admin on 127\.0\.0\.1:(\d+)/),
                  let port = Int(match.1), let adminPort = Int(match.2) else {
                throw HarnessError("no ports in: \(line)")
            }
            self.port = port
            self.adminPort = adminPort
            guard eventually({ UpgradeTests.readPID(pidFile) == process.process.processIdentifier }) else {
                throw HarnessError("--pid-file \(pidFile) does not name the daemon")
            }
        }

        /// The PID the pid file names: the process that serves.
        var pid: Int32 { UpgradeTests.readPID(pidFile) ?? 0 }

        /// Puts `contents` where the binary is as dpkg does: a new file beside it, renamed over it.
        func install(_ contents: Data) throws {
            let next = binary + ".dpkg-new"
            try contents.write(to: URL(fileURLWithPath: next))
            chmod(next, 0o755)
            guard rename(next, binary) == 0 else { throw HarnessError("rename over \(binary): \(errno)") }
        }

        /// A fresh copy of the binary under test.
        func installCopy() throws {
            try install(try Data(contentsOf: Atsgate.binary))
        }

        /// `atsgate upgrade --pid-file`, with the binary under test.
        func upgrade() throws -> AtsgateRun {
            try Atsgate.run(["upgrade", "--pid-file", pidFile, "--timeout", "60"], timeout: 90)
        }

        func metrics() throws -> String {
            let client = try RawClient(port: adminPort)
            client.send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return client.readAll()
        }

        /// SIGTERM to the process that serves now; waits for it, and every other, to be gone.
        func stop() throws {
            let pid = self.pid
            kill(pid, SIGTERM)
            guard eventually({ processGone(pid) }), process.waitForOutputEnd() else {
                throw HarnessError("PID \(pid) did not stop")
            }
        }
    }

    /// The PID a pid file names.
    static func readPID(_ path: String) -> Int32? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Decision records of a log (lines that are not JSON objects fail the test: a torn line).
    static func records(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "a line that is not a whole record: \(line.prefix(300))")
            return object
        }.filter { $0["ledger"] == nil }
    }

    enum LogDestination: String, CustomTestStringConvertible {
        case standardOutputPipe, logFile
        var testDescription: String { rawValue }
    }

    @Test(.serialized, arguments: [LogDestination.standardOutputPipe, .logFile])
    func threeUpgradesUnderLoadLoseNoByteRefuseNoConnectionAndLogEachConnectionOnce(_ log: LogDestination) throws {
        let origin = try Origin()
        let echo = try EchoOrigin()
        let logDirectory = try TemporaryDirectory()
        let logFile = logDirectory.url.appendingPathComponent("decisions.log").path
        let daemon = try UpgradableDaemon(["--connect-port", "\(echo.port)", "--grace-period", "5"]
                                          + (log == .logFile ? ["--log-file", logFile] : []))
        let tunnels = try StreamingTunnels(count: log == .logFile ? 30 : 100, proxyPort: daemon.port, originPort: echo.port)
        let idle = try (0..<10).map { _ in try RawClient(port: daemon.port) }
        for client in idle { #expect(smallExchange(client, originPort: origin.httpPort) == nil) }
        let steady = SteadyConnections(proxyPort: daemon.port, originPort: origin.httpPort)
        #expect(eventually { tunnels.leastReceived >= 4096 }, "every tunnel streams before the first upgrade")

        var pids = [daemon.pid]
        for _ in 1...3 {
            try daemon.installCopy()
            let streamed = tunnels.leastReceived
            let answered = steady.count
            let outcome = try daemon.upgrade()
            let old = pids.last!, new = daemon.pid
            #expect(outcome.status == 0, "\(outcome.stdout) \(outcome.stderr)")
            #expect(outcome.stdout == "PID \(old) (0.1.0) handed over to PID \(new) (0.1.0)\n")
            #expect(new != old)
            #expect(eventually { processGone(old) }, "PID \(old) exits once it has handed over")
            #expect(eventually { tunnels.leastReceived >= streamed + 4096 }, "every tunnel streams on through PID \(new)")
            #expect(eventually { steady.count >= answered + 5 }, "new connections are answered by PID \(new)")
            pids.append(new)
        }
        #expect(daemon.process.process.terminationStatus == 0, "the first process exited 0")
        for client in idle {
            #expect(smallExchange(client, originPort: origin.httpPort) == nil, "a client idle since before the upgrades")
        }
        let load = steady.finish()
        #expect(load.failures.isEmpty, "\(load.failures.prefix(5))")
        let streams = tunnels.finish()
        for tunnel in streams {
            #expect(tunnel.failure == nil, "tunnel from port \(tunnel.port): \(tunnel.failure ?? "")")
            #expect(tunnel.received == tunnel.sent)
        }
        for client in idle { client.close() }

        // The last process reloads and counts the upgrades it and its predecessors did.
        kill(daemon.pid, SIGHUP)
        #expect(eventually { daemon.process.stderr.contains("reloaded: new connections use configuration 2") })
        let metrics = try daemon.metrics()
        #expect(metrics.contains("atsgate_upgrades_total{result=\"success\"} 3\n"))
        #expect(metrics.contains("atsgate_upgrades_total{result=\"failure\"} 0\n"))
        #expect(metrics.contains("atsgate_build_info{version=\"0.1.0\"} 1\n"))
        try daemon.stop()

        let stderr = daemon.process.stderr
        for (old, new) in zip(pids, pids.dropFirst()) {
            #expect(stderr.contains("upgrade: PID \(old) (0.1.0) hands over to PID \(new) (0.1.0): 2 listeners, "), "\(stderr)")
            #expect(stderr.contains("took over from PID \(old) (0.1.0) as PID \(new) (0.1.0)"))
        }
        // Each tunnel once, written by the process that held it at its end, with the bytes of all four.
        let records = Self.records(log == .logFile ? try String(contentsOfFile: logFile, encoding: .utf8) : daemon.process.stdout)
        for tunnel in streams {
            let mine = records.filter { $0["client"] as? String == "127.0.0.1:\(tunnel.port)" && $0["method"] as? String == "CONNECT" }
            #expect(mine.count == 1, "tunnel from port \(tunnel.port): \(mine.count) records")
            #expect(mine.first?["bytes_up"] as? Int == tunnel.sent)
            #expect(mine.first?["bytes_down"] as? Int == tunnel.received)
            #expect((mine.first?["message"] as? String)?.contains("handed over by PID \(pids[2]) (0.1.0) in an upgrade") == true)
        }
        // Each exchange once: the steady connections' and the idle clients' two each.
        let exchanges = records.filter { $0["method"] as? String == "GET" }
        #expect(exchanges.count == load.succeeded + 2 * idle.count)
        #expect(exchanges.allSatisfy { $0["bytes_down"] as? Int ?? 0 > 0 && $0["action"] as? String == "allow" })

        // The run ledger: four runs, each old one ended by the upgrade naming the next, which names it.
        let text = log == .logFile ? try String(contentsOfFile: logFile, encoding: .utf8) : daemon.process.stdout
        let ledger = Self.ledger(text)
        let starts = ledger.filter { $0["ledger"] as? String == "run-start" }
        let stops = ledger.filter { $0["ledger"] as? String == "run-stop" }
        #expect(starts.map { $0["pid"] as? Int } == pids.map { Int($0) }, "one run-start per process: \(starts)")
        #expect(stops.count == 4, "one run-stop per process: \(stops)")
        let runs = starts.compactMap { $0["run"] as? String }
        #expect(Set(runs).count == 4, "each process a run of its own: \(runs)")
        for index in 1..<min(runs.count, 4) {
            let start = starts[index]
            #expect(start["predecessor_run"] as? String == runs[index - 1])
            #expect(start["predecessor_pid"] as? Int == Int(pids[index - 1]) && start["predecessor_version"] as? String == "0.1.0")
            let stop = stops.first { $0["run"] as? String == runs[index - 1] }
            #expect(stop?["stop"] as? String == "upgrade" && stop?["pid"] as? Int == Int(pids[index - 1]), "\(stop ?? [:])")
            #expect(stop?["successor_run"] as? String == runs[index] && stop?["successor_pid"] as? Int == Int(pids[index]))
            #expect(stop?["successor_version"] as? String == "0.1.0")
            // Every tunnel and idle client moved at each upgrade (and any steady client caught idle).
            #expect(stop?["handed_over"] as? Int ?? 0 >= streams.count + idle.count, "\(stop ?? [:])")
            #expect((stop?["message"] as? String)?.contains("(\(streams.count) tunnel") == true, "\(stop ?? [:])")
        }
        #expect(starts.first?["predecessor_run"] == nil, "the first process was started, not handed over to")
        let last = stops.first { $0["run"] as? String == runs.last }
        #expect(last?["stop"] as? String == "signal" && last?["successor_run"] == nil)
        // A record is written once, in the run of the process that held the connection at its end,
        // and each run-stop counts its own run's records.
        for stop in stops {
            let run = stop["run"] as? String
            #expect(stop["records"] as? Int == records.count { $0["run"] as? String == run }, "\(stop)")
        }
        #expect(records.allSatisfy { runs.contains($0["run"] as? String ?? "") })
        for tunnel in streams {
            let mine = records.first { $0["client"] as? String == "127.0.0.1:\(tunnel.port)" && $0["method"] as? String == "CONNECT" }
            #expect(mine?["run"] as? String == runs.last, "a moved tunnel is the last run's record")
        }
        // The report reads an upgraded service's log as whole evidence, each connection once.
        let copy = logDirectory.url.appendingPathComponent("copy.log").path
        try text.write(toFile: copy, atomically: true, encoding: .utf8)
        let report = try Atsgate.run(["report", "--format", "json", copy])
        #expect(report.status == 0, "\(report.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        #expect(json["complete"] as? Bool == true && json["incomplete_runs"] as? Int == 0, "\(json["runs"] ?? "")")
        #expect(json["records"] as? Int == records.count)
        let judged = (json["runs"] as? [[String: Any]] ?? []).map { ($0["run"] as? String ?? "", $0["complete"] as? Bool ?? false,
                                                                      $0["continued_by"] as? String) }
        #expect(judged.map(\.0) == runs && judged.allSatisfy(\.1))
        #expect(judged.map(\.2) == Array(runs.dropFirst()) + [nil])
    }

    /// An old process killed while it drains (after the hand-over) writes no run-stop; the new run's
    /// run-start names it, so the report still reads the log as whole evidence.
    @Test func anOldProcessKilledWhileItDrainsLeavesALogTheReportCallsComplete() throws {
        let origin = try Origin()
        let silent = try loopbackListener() // an origin that never answers: the exchange stays in the old process
        defer { close(silent.fd) }
        let directory = try TemporaryDirectory()
        let logFile = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try UpgradableDaemon(["--log-file", logFile, "--grace-period", "60"])
        let old = daemon.pid
        let waiting = try RawClient(port: daemon.port)
        waiting.send("GET http://127.0.0.1:\(silent.port)/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        // Once the request has reached the origin, the exchange waits for an answer in the old process.
        let exchange = accept(silent.fd, nil, nil)
        #expect(exchange >= 0)
        defer { close(exchange) }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(exchange, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8](repeating: 0, count: 4096)
        #expect(recv(exchange, &request, request.count, 0) > 0, "the request reached the origin")
        try daemon.installCopy()
        let outcome = try daemon.upgrade()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let new = daemon.pid
        #expect(eventually { daemon.process.stderr.contains("hands over to PID \(new) (0.1.0): ") })
        #expect(daemon.process.stderr.contains("1 connection finishes here"), "\(daemon.process.stderr)")
        kill(old, SIGKILL)
        #expect(eventually { processGone(old) })
        waiting.close()
        let client = try RawClient(port: daemon.port)
        client.send("GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(client.readAll().hasPrefix("HTTP/1.1 200 "))
        try daemon.stop()

        let ledger = Self.ledger(try String(contentsOfFile: logFile, encoding: .utf8))
        let starts = ledger.filter { $0["ledger"] as? String == "run-start" }
        let stops = ledger.filter { $0["ledger"] as? String == "run-stop" }
        let runs = starts.compactMap { $0["run"] as? String }
        #expect(runs.count == 2 && starts.last?["predecessor_run"] as? String == runs.first)
        #expect(stops.count == 1 && stops.first?["run"] as? String == runs.last, "the killed process wrote none: \(stops)")
        let report = try Atsgate.run(["report", "--format", "json", logFile])
        #expect(report.status == 0, "\(report.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        #expect(json["complete"] as? Bool == true && json["incomplete_runs"] as? Int == 0)
        let first = (json["runs"] as? [[String: Any]])?.first
        #expect(first?["run"] as? String == runs.first && first?["complete"] as? Bool == true)
        #expect(first?["continued_by"] as? String == runs.last && first?["stop"] is NSNull)
    }

    /// The run ledger's records of a JSON log.
    static func ledger(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["ledger"] != nil }
    }

    @Test func brokenBinariesChangeNothingButACounterAndAMessage() throws {
        let origin = try Origin()
        let echo = try EchoOrigin()
        let configuration = try TemporaryDirectory()
        let config = try configuration.write("atsgate.conf", "connect-port = \(echo.port)\ngrace-period = 5\n")
        let daemon = try UpgradableDaemon(["--config", config, "--upgrade-timeout", "3"])
        let tunnels = try StreamingTunnels(count: 10, proxyPort: daemon.port, originPort: echo.port)
        let steady = SteadyConnections(proxyPort: daemon.port, originPort: origin.httpPort)
        let pid = daemon.pid
        let binary = try Data(contentsOf: Atsgate.binary)

        let broken: [(what: String, install: () throws -> Void, reason: String)] = [
            // Cut inside the ELF headers, the kernel refuses it; cut further on, it starts and crashes.
            ("a copy cut short at 64 bytes", { try daemon.install(binary.prefix(64)) }, "Exec format error"),
            ("a copy cut short at 1 MB", { try daemon.install(binary.prefix(1 << 20)) }, "before it said hello"),
            ("a script that exits 1", { try daemon.install(Data("#!/bin/sh\nexit 1\n".utf8)) },
             "exited with status 1 before it said hello"),
            ("a binary whose configuration fails", {
                try daemon.installCopy()
                try configuration.write("atsgate.conf", "connect-port = \(echo.port)\nno-such-setting = 1\n")
            }, "cannot take over: "),
            ("a binary that never answers", { try daemon.install(Data("#!/bin/sh\nexec sleep 60\n".utf8)) },
             "did not say hello in time (--upgrade-timeout 3 s)"),
        ]
        for (index, attempt) in broken.enumerated() {
            try attempt.install()
            let streamed = tunnels.leastReceived
            let outcome = try daemon.upgrade()
            #expect(outcome.status == 1, "\(attempt.what): \(outcome.stderr)")
            #expect(outcome.stderr.contains("PID \(pid) (0.1.0) keeps serving: "), "\(attempt.what): \(outcome.stderr)")
            #expect(outcome.stderr.contains(attempt.reason), "\(attempt.what): \(outcome.stderr)")
            #expect(daemon.process.stderr.contains("upgrade failed, PID \(pid) (0.1.0) keeps serving: "))
            #expect(daemon.pid == pid && !processGone(pid), "\(attempt.what): the same process serves")
            #expect(try daemon.metrics().contains("atsgate_upgrades_total{result=\"failure\"} \(index + 1)\n"))
            #expect(eventually { tunnels.leastReceived >= streamed + 2048 }, "\(attempt.what): the tunnels stream on")
        }
        #expect(daemon.process.stderr.contains("no-such-setting"), "the new process said what is wrong with its configuration")

        // A second SIGUSR2 while an upgrade waits for its new binary is refused.
        try daemon.install(Data("#!/bin/sh\nexec sleep 60\n".utf8))
        let starts = daemon.process.stderr.components(separatedBy: "upgrade: starting the new ").count
        kill(pid, SIGUSR2)
        #expect(eventually { daemon.process.stderr.components(separatedBy: "upgrade: starting the new ").count > starts })
        kill(pid, SIGUSR2)
        #expect(eventually { daemon.process.stderr.contains("upgrade refused, PID \(pid) (0.1.0) keeps serving: an upgrade is starting") })
        #expect(eventually { try! daemon.metrics().contains("atsgate_upgrades_total{result=\"failure\"} 7\n") })

        // A good binary and configuration again: the upgrade goes through, and carries the counts on.
        try configuration.write("atsgate.conf", "connect-port = \(echo.port)\ngrace-period = 5\n")
        try daemon.installCopy()
        let outcome = try daemon.upgrade()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(daemon.pid != pid)
        let metrics = try daemon.metrics()
        #expect(metrics.contains("atsgate_upgrades_total{result=\"success\"} 1\n"))
        #expect(metrics.contains("atsgate_upgrades_total{result=\"failure\"} 7\n"))
        let load = steady.finish()
        #expect(load.failures.isEmpty, "\(load.failures.prefix(5))")
        for tunnel in tunnels.finish() {
            #expect(tunnel.failure == nil, "\(tunnel.failure ?? "")")
            #expect(tunnel.received == tunnel.sent)
        }
        // SIGTERM stops the new process as it stops any.
        let last = daemon.pid
        try daemon.stop()
        #expect(daemon.process.stderr.contains("SIGTERM: stopping"))
        #expect(!FileManager.default.fileExists(atPath: daemon.pidFile), "PID \(last) removed its pid file")
    }

    @Test func theTLSListenerMovesAndAnIdleTLSClientIsClosedByTheOldProcess() throws {
        let pki = TestPKI.shared
        let origin = try Origin()
        let daemon = try UpgradableDaemon(["--listen-tls", "127.0.0.1:0", "--listen-cert", try pki.path("good-rsa-chain.pem"),
                                           "--listen-key", try pki.path("good-rsa.key")])
        let line = daemon.process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
        let tlsPort = try #require(line.firstMatch(of: /127\.0\.0\.1:(\d+) \(TLS\)/).flatMap { Int($0.1) })
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_idle_client.py").path
        let client = try BackgroundProcess(pythonExecutable, [script, "--port", "\(tlsPort)", "--cafile", try pki.path("ca.pem"),
                                                              "--url", "http://127.0.0.1:\(origin.httpPort)/small"])
        try client.wait { out, _ in out.contains("first ") }
        #expect(client.stdout.contains("first 200"), "\(client.stderr)")
        let old = daemon.pid
        try daemon.installCopy()
        #expect(try daemon.upgrade().status == 0)
        #expect(eventually { processGone(old) })
        // Its TLS session lives in the old process's OpenSSL: it cannot move, and idle it is closed.
        client.send("go\n")
        try client.wait { out, _ in out.contains("fresh ") }
        #expect(client.stdout.contains("second closed"), "\(client.stdout)")
        #expect(client.stdout.contains("fresh 200"), "the TLS listener serves from PID \(daemon.pid): \(client.stdout) \(client.stderr)")
        try daemon.stop()
    }

    @Test func theOldProcessNamesTheNewOneToSystemdAndWaitsUntilItHasReadIt() throws {
        let directory = try TemporaryDirectory()
        let manager = try NotifyListener(path: directory.url.appendingPathComponent("notify").path, credentials: true)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = manager.path
        environment["WATCHDOG_USEC"] = "2000000"
        environment.removeValue(forKey: "WATCHDOG_PID")
        let daemon = try UpgradableDaemon([], environment: environment)
        let old = daemon.pid
        _ = try manager.nextWithSender { $0.contains("READY=1") }
        try daemon.installCopy()
        let upgrade = try BackgroundProcess(Atsgate.binary.path, ["upgrade", "--pid-file", daemon.pidFile])
        let main = try manager.nextWithSender { $0.hasPrefix("MAINPID=") }
        let barrier = try manager.nextWithSender { $0.contains("BARRIER=1") }
        try upgrade.wait { out, _ in out.contains("handed over") }
        let new = daemon.pid
        #expect(main.pid == old, "MAINPID= comes from the main process systemd knows")
        #expect(main.text.hasPrefix("MAINPID=\(new)\n"), "\(main.text)")
        #expect(barrier.pid == old)
        let ready = try manager.nextWithSender { $0.contains("READY=1") }
        #expect(ready.pid == new, "the new process says READY once it is the main process")
        let watchdog = try manager.nextWithSender { $0 == "WATCHDOG=1" }
        #expect(watchdog.pid == new, "and pings the watchdog: WATCHDOG_PID named the old process and was dropped")
        try daemon.stop()
    }

    @Test func aReloadDuringAnUpgradeIsRefusedAndAStopGivesTheUpgradeUp() throws {
        let daemon = try UpgradableDaemon([])
        let pid = daemon.pid
        // A new binary that never says hello: the upgrade waits for it.
        try daemon.install(Data("#!/bin/sh\necho $$ > \"$0.child\"\nexec sleep 60\n".utf8))
        kill(pid, SIGUSR2)
        let childFile = daemon.binary + ".child"
        // The shell creates the file before it writes the PID into it: wait for the PID.
        #expect(eventually { UpgradeTests.readPID(childFile) != nil })
        let child = try #require(UpgradeTests.readPID(childFile))
        kill(pid, SIGHUP)
        #expect(eventually { daemon.process.stderr.contains("reload refused: an upgrade is in progress") })
        #expect(!daemon.process.stderr.contains("reloaded:"))
        kill(pid, SIGTERM)
        #expect(eventually { daemon.process.stderr.contains("upgrade: given up (SIGTERM): stopping PID \(child)") })
        #expect(eventually { processGone(pid) }, "the daemon stops as asked")
        #expect(processGone(child), "and its would-be successor is gone")
        #expect(daemon.process.process.terminationStatus == 0)
    }

    @Test func upgradeWithoutADaemonSaysSo() throws {
        let directory = try TemporaryDirectory()
        let missing = try Atsgate.run(["upgrade", "--pid-file", directory.url.appendingPathComponent("none.pid").path])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no PID in it"))
        let gone = try Atsgate.run(["upgrade", "--pid", "999999"])
        #expect(gone.status == 2)
        #expect(gone.stderr.contains("no process 999999"))
    }
}
