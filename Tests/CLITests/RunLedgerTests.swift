import Foundation
import Glibc
import Testing
import TestSupport

/// The run ledger with the real daemon and real signals (docs/decision-log-ledger.md): a SIGKILL
/// under load leaves a log that `atsgate report` calls incomplete, naming the run, the connections
/// open at its last checkpoint and how long after it the log ends; a SIGTERM ends the run with its
/// run-stop and the report is as before; a restart, a torn last line, a rotated log, the journal and
/// the text format. Waits are bounded and for conditions, never for a time.
@Suite(.serialized) struct RunLedgerTests {
    /// The version the ledger's records name (`atsgate --version`).
    static let version: String = {
        (try? Atsgate.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "?"
    }()
    var version: String { Self.version }

    // MARK: SIGKILL

    @Test func aSigkillUnderLoadLeavesALogTheReportCallsIncomplete() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(["--log-file", path, "--log-checkpoint", "1", "--connect-port", "\(origin.httpPort)"])
        let pid = daemon.process.process.processIdentifier
        // Tunnels open through the daemon to the origin, each having relayed an exchange.
        let tunnels = try (0..<4).map { _ in try daemon.openTunnel(to: origin.httpPort) }
        let small = String(repeating: "a", count: 100)
        for tunnel in tunnels {
            tunnel.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(tunnel.read(until: small).hasSuffix(small))
        }
        // Forwarded requests in flight: clients that keep asking for /slow (0.3 s at the origin).
        let load = ForwardingLoad(proxyPort: daemon.port, originPort: origin.httpPort, clients: 3)
        defer { load.stop() }
        try waitUntil("a checkpoint that counts the tunnels and forwarded requests") {
            let log = LedgerLog(path)
            return (log.checkpoints.last?["open"] as? Int ?? 0) >= tunnels.count + 1 && log.decisions.count >= 3
        }
        kill(pid, SIGKILL)
        daemon.process.stop()
        load.stop()

        let log = LedgerLog(path)
        let run = try #require(log.ledger.first?["run"] as? String)
        #expect(log.ledger.first?["ledger"] as? String == "run-start" && log.ledger.first?["pid"] as? Int == Int(pid))
        #expect(!log.ledger.contains { $0["ledger"] as? String == "run-stop" }, "nobody wrote a run-stop")
        #expect(!log.decisions.contains { $0["method"] as? String == "CONNECT" }, "the open tunnels left no record")
        #expect(load.answers >= log.decisions.count, "clients had at least as many answers as the log has records")
        let checkpoint = try #require(log.checkpoints.last)
        let open = try #require(checkpoint["open"] as? Int)

        let report = try Atsgate.run(["report", path])
        #expect(report.status == 2, "\(report.stderr)")
        let named = "run \(run) (PID \(pid), atsgate \(version), started \(try #require(log.ledger.first?["time"] as? String))) "
            + "ended without its run-stop (killed, or its log goes on in a file not read): \(open) connections open at its "
            + "last checkpoint (\(try #require(checkpoint["time"] as? String))); its log ends "
        #expect(report.stderr.hasPrefix("atsgate: incomplete evidence: \(named)"), "\(report.stderr)")
        #expect(report.stderr.contains(/its log ends \d+\.\d s after that checkpoint; --allow-incomplete judges the rest anyway\n$/))
        #expect(report.stdout.contains("  INCOMPLETE: \(named)"), "the report is still written: \(report.stdout)")

        let allowed = try Atsgate.run(["report", "--allow-incomplete", "--format", "json", path])
        #expect(allowed.status == 0, "judged anyway, and nothing was blocked: \(allowed.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(allowed.stdout.utf8)) as? [String: Any])
        #expect(json["complete"] as? Bool == false && json["incomplete_runs"] as? Int == 1)
        #expect((json["runs"] as? [[String: Any]])?.first?["open_at_last_checkpoint"] as? Int == open)
    }

    // MARK: SIGTERM

    @Test(arguments: [false, true])
    func aCleanStopEndsTheRunWithItsStopAndTheReportIsAsBefore(blocking: Bool) throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(["--log-file", path, "--log-checkpoint", "1", "--admin", "127.0.0.1:0"])
        let pid = daemon.process.process.processIdentifier
        for _ in 0..<5 {
            let run = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"])
            #expect(run.stdout.count == 100, "\(run.stderr)")
        }
        if blocking { _ = try Subprocess.curl(["-x", daemon.proxy, "http://blocked.example/"]) }
        let made = blocking ? 6 : 5
        try waitUntil("two checkpoints after the last record") {
            let log = LedgerLog(path)
            return log.checkpoints.filter { $0["records"] as? Int == made }.count >= 2
        }
        let metrics = try daemon.admin("/metrics")
        let counted = metrics.split(separator: "\n").filter { $0.hasPrefix("atsgate_decisions_total{") }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(counted == made, "the decision counters count decisions, not the ledger's records: \(counted)")
        #expect(daemon.process.stop() == 0)

        let log = LedgerLog(path)
        #expect(log.torn == 0)
        let start = try #require(log.all.first)
        let run = try #require(start["run"] as? String)
        #expect(start["ledger"] as? String == "run-start" && start["pid"] as? Int == Int(pid))
        #expect(start["version"] as? String == version && start["generation"] as? Int == 1 && start["checkpoint_s"] as? Int == 1)
        #expect(log.all.allSatisfy { $0["run"] as? String == run }, "every record carries the run")
        let stop = try #require(log.all.last)
        #expect(stop["ledger"] as? String == "run-stop" && stop["stop"] as? String == "signal")
        #expect(stop["records"] as? Int == made && stop["dropped"] as? Int == 0 && stop["open"] as? Int == 0)
        #expect(log.decisions.count == made)

        let report = try Atsgate.run(["report", path])
        #expect(report.status == (blocking ? 1 : 0), "\(report.stdout)\(report.stderr)")
        #expect(report.stdout.hasPrefix("atsgate report: \(made) records from 1 log"), "ledger records are no records")
        #expect(!report.stdout.contains("INCOMPLETE") && !report.stdout.contains("note:") && !report.stdout.contains("skipped"))
    }

    // MARK: a restart

    @Test func twoRunsInOneLogAndOnlyTheKilledOneIsIncomplete() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        var runs: [String] = []
        for kill9 in [false, true] {
            let daemon = try Daemon(["--log-file", path])
            for _ in 0..<3 { _ = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"]) }
            try waitUntil("this run's three records") { LedgerLog(path).decisions.count == (kill9 ? 6 : 3) }
            if kill9 { kill(daemon.process.process.processIdentifier, SIGKILL) }
            daemon.process.stop()
            runs.append(try #require(LedgerLog(path).ledger.last { $0["ledger"] as? String == "run-start" }?["run"] as? String))
        }
        #expect(runs[0] != runs[1], "a new process, a new run")
        let report = try Atsgate.run(["report", "--format", "json", path])
        #expect(report.status == 2)
        #expect(report.stderr.contains("run \(runs[1]) (PID") && !report.stderr.contains(runs[0]), "\(report.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let states = (json["runs"] as? [[String: Any]] ?? []).map { ($0["run"] as? String ?? "", $0["complete"] as? Bool ?? false) }
        #expect(states.map(\.0) == runs && states.map(\.1) == [true, false])
        #expect(json["records"] as? Int == 6)
    }

    // MARK: a torn line

    @Test func aLogCutMidLineIsReadAsFarAsItGoesAndItsRunIsIncomplete() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(["--log-file", path])
        for _ in 0..<3 { _ = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"]) }
        #expect(daemon.process.stop() == 0)
        // The last line (the run-stop) cut in the middle, as a crash during its write would leave it.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        let last = try #require(lines.last)
        #expect(last.contains(#""ledger":"run-stop""#))
        #expect(truncate(path, off_t(text.utf8.count - 1 - last.utf8.count / 2)) == 0)

        let report = try Atsgate.run(["report", path])
        #expect(report.status == 2)
        #expect(report.stdout.hasPrefix("atsgate report: 3 records from 1 log"))
        #expect(report.stdout.contains("1 of \(lines.count) lines skipped (line \(lines.count): not a JSON object)"), "\(report.stdout)")
        let run = try #require(LedgerLog(path).ledger.first?["run"] as? String)
        #expect(report.stderr.contains("incomplete evidence: run \(run) ("), "\(report.stderr)")
    }

    // MARK: logrotate

    @Test func aLogRotatedBetweenCheckpointsIsANoteAndBothFilesTogetherAreComplete() throws {
        let origin = try Origin()
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(["--log-file", path, "--log-checkpoint", "1"])
        let get = { _ = try Subprocess.curl(["-x", daemon.proxy, "http://127.0.0.1:\(origin.httpPort)/small"]) }
        for _ in 0..<3 { try get() }
        try waitUntil("a checkpoint after the first records") { LedgerLog(path).checkpoints.contains { $0["records"] as? Int == 3 } }
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        kill(daemon.process.process.processIdentifier, SIGUSR1)
        try waitUntil("the file opened again") { FileManager.default.fileExists(atPath: path) }
        for _ in 0..<3 { try get() }
        try waitUntil("a checkpoint in the new file") { LedgerLog(path).checkpoints.contains { $0["records"] as? Int == 6 } }
        #expect(daemon.process.stop() == 0)
        let run = try #require(LedgerLog(path + ".1").ledger.first?["run"] as? String)
        #expect(LedgerLog(path).ledger.first?["ledger"] as? String != "run-start")

        let newer = try Atsgate.run(["report", path])
        #expect(newer.status == 0, "\(newer.stdout)\(newer.stderr)")
        #expect(newer.stdout.contains("  note: run \(run): its start is not in these logs\n"))
        #expect(!newer.stdout.contains("INCOMPLETE"))
        let older = try Atsgate.run(["report", path + ".1"])
        #expect(older.status == 2, "the moved file alone has no run-stop")
        let both = try Atsgate.run(["report", path + ".1", path])
        #expect(both.status == 0 && !both.stdout.contains("note:") && !both.stdout.contains("INCOMPLETE"), "\(both.stdout)")
        #expect(both.stdout.hasPrefix("atsgate report: 6 records from 2 logs"))
    }

    // MARK: journald and text

    /// journald's socket stood in for, as DecisionLogPressureTests does: the same records as entries.
    @Test(.enabled(if: MountNamespace.available, "needs root and unshare -m (mount namespaces)"))
    func theJournalGetsTheLedgerAsEntriesWithAMessageInWords() throws {
        let directory = try TemporaryDirectory()
        let journald = try JournalSocket(path: directory.url.appendingPathComponent("socket").path)
        let script = "mount -t tmpfs atsgate-run /run && mkdir -p /run/systemd/journal && "
            + "mount --bind \"$0\" /run/systemd/journal && exec \"$1\" run --listen 127.0.0.1:0 "
            + "--log-format journal --log-checkpoint 1"
        let daemon = try Daemon(process: BackgroundProcess(MountNamespace.unshare, [
            "-m", "--propagation", "private", "sh", "-c", script, directory.url.path, Atsgate.binary.path]))
        let pid = daemon.process.process.processIdentifier
        var entries: [[String: String]] = []
        /// Receives until `predicate` holds for an entry (bounded).
        func receive(until predicate: ([String: String]) -> Bool) throws -> [String: String] {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                guard let entry = journald.receive() else { continue }
                entries.append(entry)
                if predicate(entry) { return entry }
            }
            throw HarnessError("no such journal entry; received \(entries)")
        }
        let start = try receive { $0["ATS_LEDGER"] != nil }
        #expect(start["ATS_LEDGER"] == "run-start" && start["ATS_PID"] == "\(pid)" && start["PRIORITY"] == "6")
        let run = try #require(start["ATS_RUN"])
        #expect(start["MESSAGE"] == "atsgate run \(run) started (\(version), PID \(pid)); a checkpoint every 1 s")
        for number in 0..<3 {
            let client = try RawClient(port: daemon.port)
            client.send("GET http://r\(number).example/ HTTP/1.1\r\nHost: r\(number).example\r\nConnection: close\r\n\r\n")
            _ = client.readAll()
        }
        let checkpoint = try receive { $0["ATS_LEDGER"] == "run-checkpoint" && $0["ATS_RECORDS"] == "3" }
        #expect(checkpoint["ATS_RUN"] == run && checkpoint["ATS_OPEN"] == "0")
        #expect(checkpoint["MESSAGE"] == "atsgate run \(run): 3 decision records written, 0 lost, 0 connections open (configuration 1)")
        #expect(daemon.process.stop() == 0)
        let stop = try receive { $0["ATS_LEDGER"] == "run-stop" }
        #expect(stop["ATS_STOP"] == "signal" && stop["ATS_RECORDS"] == "3")
        #expect(stop["MESSAGE"] == "atsgate run \(run) stopped (PID \(pid)): 3 decision records written, 0 lost, 0 connections cut at the stop")
        let decisions = entries.filter { $0["ATS_ACTION"] != nil }
        #expect(decisions.count == 3 && decisions.allSatisfy { $0["ATS_RUN"] == run })
        #expect(entries.filter { $0["ATS_LEDGER"] != nil }.allSatisfy { $0["ATS_ACTION"] == nil && $0["ATS_REASON"] == nil })
    }

    /// The text format and the config file's key: `log-checkpoint = 0`, no checkpoints.
    @Test func theTextLogCarriesTheLedgerAndTheConfigFileTakesTheKey() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let config = try directory.write("atsgate.conf", "log-file = \(path)\nlog-format = text\nlog-checkpoint = 0\n")
        let daemon = try Daemon(["--config", config])
        let pid = daemon.process.process.processIdentifier
        let client = try RawClient(port: daemon.port)
        client.send("GET http://r.example/ HTTP/1.1\r\nHost: r.example\r\nConnection: close\r\n\r\n")
        _ = client.readAll()
        #expect(daemon.process.stop() == 0)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        let run = try #require(lines.first?.firstMatch(of: #/ - LEDGER run-start run=([0-9a-f]{16}) /#)?.1)
        #expect(lines[0].hasSuffix(" pid=\(pid) version=\(version) generation=1 checkpoint_s=0: atsgate run \(run) started "
                                   + "(\(version), PID \(pid)); no checkpoints (--log-checkpoint 0)"), "\(lines[0])")
        #expect(lines[1].contains("http://r.example:80 BLOCK cleartext-http") && lines[1].contains(" run=\(run): "), "\(lines[1])")
        #expect(lines[2].contains(" - LEDGER run-stop run=\(run) pid=\(pid) version=\(version) records=1 dropped=0 open=0 stop=signal: "),
                "\(lines[2])")
    }

    @Test(arguments: [
        ("90000", "--log-checkpoint 90000: seconds from 0 (no checkpoints) to 86400"),
        ("soon", "--log-checkpoint"),
    ])
    func aBadCheckpointIntervalIsRefused(value: String, expected: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--log-checkpoint", value], timeout: 10)
        #expect(run.status == 2)
        #expect(run.stderr.contains(expected), "\(run.stderr)")
    }

    // MARK: helpers

    /// Polls `condition` (bounded: a minute) until it holds.
    private func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        throw HarnessError("timed out waiting for \(what)")
    }
}

/// A decision log file as far as it can be read: complete lines parsed, a torn one counted.
private struct LedgerLog {
    var all: [[String: Any]] = []
    var torn = 0

    init(_ path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        for line in text.split(separator: "\n") {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                all.append(object)
            } else {
                torn += 1
            }
        }
    }

    var ledger: [[String: Any]] { all.filter { $0["ledger"] != nil } }
    var checkpoints: [[String: Any]] { ledger.filter { $0["ledger"] as? String == "run-checkpoint" } }
    var decisions: [[String: Any]] { all.filter { $0["ledger"] == nil } }
}

/// Clients that keep forwarded requests in flight through the proxy (GET /slow, one connection
/// each, one after another) until stopped; counts the answers they received.
private final class ForwardingLoad: @unchecked Sendable {
    private let lock = NSLock()
    private var received = 0
    private var stopped = false
    private let done = DispatchGroup()

    init(proxyPort: Int, originPort: Int, clients: Int) {
        for _ in 0..<clients {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                while !lock.withLock({ stopped }) {
                    guard let client = try? RawClient(port: proxyPort, timeout: 5) else { return }
                    client.send("GET http://127.0.0.1:\(originPort)/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if client.readAll().hasSuffix("slow\n") { lock.withLock { received += 1 } }
                }
            }
        }
    }

    var answers: Int { lock.withLock { received } }

    /// Stops asking and waits (bounded) for the clients to finish.
    func stop() {
        lock.withLock { stopped = true }
        _ = done.wait(timeout: .now() + 15)
    }
}
