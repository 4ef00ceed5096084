import ATSPolicy
import ATSReport
import Foundation
import FoundationXML
import Testing
import TrafficLogs

/// The report reads the run ledger (docs/decision-log-ledger.md): a run with its run-start and no
/// run-stop, that no upgrade continued, makes the evidence incomplete, named with its id, PID,
/// version, start, the connections open at its last checkpoint and how long after it the log ends.
@Suite struct RunLedgerReportTests {
    typealias F = ReportFixtures

    static let killed = "3f9c00000000000a"
    static let clean = "3f9c00000000000b"

    static func start(_ run: String, time: String, pid: Int = 812, predecessor: String? = nil) -> String {
        var line = #"{"time":"\#(time)","run":"\#(run)","ledger":"run-start","pid":\#(pid),"version":"0.4.0","generation":1,"checkpoint_s":10"#
        if let predecessor { line += #","predecessor_run":"\#(predecessor)","predecessor_pid":700,"predecessor_version":"0.3.9""# }
        return line + #","message":"atsgate run \#(run) started"}"#
    }

    static func checkpoint(_ run: String, time: String, records: Int, open: Int) -> String {
        #"{"time":"\#(time)","run":"\#(run)","ledger":"run-checkpoint","pid":812,"version":"0.4.0","records":\#(records),"dropped":0,"open":\#(open),"generation":1,"message":"m"}"#
    }

    static func stop(_ run: String, time: String, upgrade: String? = nil) -> String {
        var line = #"{"time":"\#(time)","run":"\#(run)","ledger":"run-stop","pid":812,"version":"0.4.0","records":2,"dropped":0,"open":0"#
        line += upgrade.map { #","stop":"upgrade","successor_run":"\#($0)","successor_pid":900,"successor_version":"0.5.0","handed_over":3"# }
            ?? #","stop":"signal""#
        return line + #","message":"m"}"#
    }

    static func decision(_ run: String, time: String, host: String = "api.example.com") -> String {
        F.record("https", host, 443, time: time, tls: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", extra: #","run":"\#(run)""#)
    }

    /// A run killed 4.2 s after its last checkpoint, which counted 3 open connections.
    static let killedRun = [
        start(killed, time: "2026-11-23T09:00:00.000Z"),
        decision(killed, time: "2026-11-23T09:00:01.000Z"),
        checkpoint(killed, time: "2026-11-23T09:00:10.000Z", records: 1, open: 3),
        decision(killed, time: "2026-11-23T09:00:14.200Z", host: "www.example.com"),
    ]

    static let cleanRun = [
        start(clean, time: "2026-11-23T10:00:00.000Z", pid: 813),
        decision(clean, time: "2026-11-23T10:00:01.000Z"),
        stop(clean, time: "2026-11-23T10:00:02.000Z"),
    ]

    static let description = "run \(killed) (PID 812, atsgate 0.4.0, started 2026-11-23T09:00:00.000Z) ended without its "
        + "run-stop (killed, or its log goes on in a file not read): 3 connections open at its last checkpoint "
        + "(2026-11-23T09:00:10.000Z); its log ends 4.2 s after that checkpoint"

    @Test func ledgerRecordsAreNotDecisionsAndACleanRunIsComplete() throws {
        let summary = F.summary(Self.cleanRun)
        #expect(summary.records == 1, "the decision, not the ledger's records")
        #expect(summary.inputs[0].ledgerRecords == 2 && summary.inputs[0].missingFields == 0 && summary.inputs[0].notRecords == 0,
                "read, not skipped")
        #expect(summary.buckets.minutes.values.reduce(0) { $0 + $1.reduce(0, +) } == 1, "the timeline counts decisions only")
        let run = try #require(summary.runs.first)
        #expect(summary.runs.count == 1 && run.id == Self.clean && run.decisions == 1 && run.pid == 813)
        #expect(run.stop?.stop == "signal")
        let report = Report(summary: summary, policies: [try F.policy("{}")], options: EngineOptions())
        #expect(!report.isIncomplete && report.incompleteRuns.isEmpty && report.runNotes.isEmpty)
        #expect(!report.text.contains("INCOMPLETE") && !report.junit.contains("evidence"))
    }

    @Test func aRunWithoutItsStopIsIncompleteAndNamed() throws {
        let report = try F.report("{}", Self.killedRun + Self.cleanRun)
        #expect(report.isIncomplete)
        #expect(report.incompleteRuns.map(\.id) == [Self.killed], "the restart's clean run is complete")
        #expect(report.incompleteDescriptions == [Self.description])
        #expect(report.missingDecisions == 0)
    }

    @Test func everyFormatSaysWhichRunIsIncomplete() throws {
        let report = try F.report("{}", Self.killedRun)
        #expect(report.text.contains("  INCOMPLETE: \(Self.description)\n"))
        #expect(report.text.hasSuffix("; INCOMPLETE: 1 run ended without a run-stop\n"), "\(report.text)")

        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        #expect(json["complete"] as? Bool == false && json["incomplete_runs"] as? Int == 1)
        let run = try #require((json["runs"] as? [[String: Any]])?.first)
        #expect(run["run"] as? String == Self.killed && run["pid"] as? Int == 812 && run["version"] as? String == "0.4.0")
        #expect(run["complete"] as? Bool == false && run["start"] as? String == "2026-11-23T09:00:00.000Z")
        #expect(run["open_at_last_checkpoint"] as? Int == 3 && run["log_ends_after_s"] as? Double == 4.2)
        #expect(run["decisions"] as? Int == 2 && run["stop"] is NSNull)
        #expect((json["inputs"] as? [[String: Any]])?.first?["ledger_records"] as? Int == 2)

        #expect(report.html.contains("<p class=\"incomplete\"><b>Incomplete evidence</b> \(Self.description)</p>"))

        let sarif = try #require(try JSONSerialization.jsonObject(with: Data(report.sarif(toolVersion: "0").pretty.utf8)) as? [String: Any])
        let sarifRun = try #require((sarif["runs"] as? [[String: Any]])?.first)
        let result = try #require((sarifRun["results"] as? [[String: Any]])?.first { $0["ruleId"] as? String == "incomplete-evidence" })
        #expect(result["level"] as? String == "error")
        #expect((result["message"] as? [String: Any])?["text"] as? String == "Incomplete evidence: \(Self.description).")
        #expect((result["properties"] as? [String: Any])?["run"] as? String == Self.killed)
        #expect((sarifRun["invocations"] as? [[String: Any]])?.first?["executionSuccessful"] as? Bool == false)

        let junit = try XMLDocument(data: Data(report.junit.utf8))
        let errors = try junit.nodes(forXPath: "//testsuite[@name='evidence']/testcase[@name='run \(Self.killed)']/error")
            .compactMap { $0 as? XMLElement }
        #expect(errors.map { $0.attribute(forName: "type")?.stringValue } == ["run-incomplete"])

        let allowed = try F.report("{}", Self.killedRun, settings: ReportSettings(allowIncomplete: true))
        #expect(try XMLDocument(data: Data(allowed.junit.utf8)).rootElement()?.attribute(forName: "errors")?.stringValue == "0")
        #expect(allowed.text.contains("  INCOMPLETE: \(Self.description)\n"), "still said")
        #expect(allowed.html.contains("(judged anyway: --allow-incomplete)"))
    }

    @Test func overflowAndAKilledRunAreBothSaid() throws {
        let report = try F.report("{}", Self.killedRun + [EvidenceTests.overflow(5)])
        #expect(report.incompleteDescriptions.count == 2)
        #expect(report.text.hasSuffix("; INCOMPLETE: 5 decisions missing from the logs; 1 run ended without a run-stop\n"))
    }

    @Test func withoutACheckpointTheGapRunsFromTheStart() throws {
        let report = try F.report("{}", [Self.start(Self.killed, time: "2026-11-23T09:00:00.000Z"),
                                         Self.decision(Self.killed, time: "2026-11-23T09:00:02.345Z")])
        #expect(report.incompleteDescriptions.first?.hasSuffix(": no checkpoint was written; its log ends 2.3 s after its start") == true,
                "\(report.incompleteDescriptions)")
    }

    /// An upgrade: the new process's run-start names the old run, which is then complete even when
    /// the old process was killed after the hand-over and wrote no run-stop.
    @Test(arguments: [false, true])
    func aRunAnUpgradeContinuedIsComplete(oldWroteItsStop: Bool) throws {
        let successor = "3f9c00000000000c"
        var lines = Array(Self.killedRun)
        if oldWroteItsStop { lines.append(Self.stop(Self.killed, time: "2026-11-23T09:00:15.000Z", upgrade: successor)) }
        lines += [Self.start(successor, time: "2026-11-23T09:00:14.500Z", pid: 900, predecessor: Self.killed),
                  Self.decision(successor, time: "2026-11-23T09:00:16.000Z"),
                  Self.stop(successor, time: "2026-11-23T09:00:20.000Z")]
        let report = try F.report("{}", lines)
        #expect(!report.isIncomplete, "\(report.incompleteDescriptions)")
        #expect(report.summary.runs.first { $0.id == successor }?.predecessor?.run == Self.killed)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
        let old = try #require((json["runs"] as? [[String: Any]])?.first { $0["run"] as? String == Self.killed })
        #expect(old["continued_by"] as? String == successor && old["complete"] as? Bool == true)
    }

    /// logrotate moved the file between two checkpoints: the new file's run has no run-start; that is
    /// a note, not a reason to fail. The old file alone holds a run without its stop.
    @Test func aRotatedLogNotesTheMissingStartAndTheTwoFilesTogetherAreComplete() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let old = directory.appendingPathComponent("decisions.log.1").path
        let new = directory.appendingPathComponent("decisions.log").path
        try (Array(Self.killedRun.prefix(3)).joined(separator: "\n") + "\n").write(toFile: old, atomically: true, encoding: .utf8)
        try ([Self.decision(Self.killed, time: "2026-11-23T09:00:14.200Z"),
              Self.checkpoint(Self.killed, time: "2026-11-23T09:00:20.000Z", records: 2, open: 0),
              Self.stop(Self.killed, time: "2026-11-23T09:00:21.000Z")].joined(separator: "\n") + "\n")
            .write(toFile: new, atomically: true, encoding: .utf8)
        func report(_ paths: [String]) throws -> Report {
            Report(summary: try TrafficSummary.read(paths), policies: [try F.policy("{}")], options: EngineOptions())
        }
        let newOnly = try report([new])
        #expect(!newOnly.isIncomplete)
        #expect(newOnly.runNotes == ["run \(Self.killed): its start is not in these logs"])
        #expect(newOnly.text.contains("  note: run \(Self.killed): its start is not in these logs\n"))
        #expect(newOnly.html.contains("<p class=\"note\">run \(Self.killed): its start is not in these logs</p>"))

        #expect(try report([old]).incompleteRuns.map(\.id) == [Self.killed], "the old file alone: no run-stop in it")
        let both = try report([new, old])
        #expect(!both.isIncomplete && both.runNotes.isEmpty, "read in any order, the two files hold the whole run")
        #expect(both.summary.runs.first?.inputs == [new, old])
    }

    /// The last line cut in the middle (the run-stop's): the report reads what it can, skips the
    /// torn line, and the run has no stop.
    @Test func aTornLastLineIsSkippedAndTheRunIsIncomplete() throws {
        let stop = Self.stop(Self.killed, time: "2026-11-23T09:00:15.000Z")
        let summary = F.summary(Self.killedRun + [String(stop.prefix(stop.count / 2))])
        #expect(summary.inputs[0].notRecords == 1)
        let report = Report(summary: summary, policies: [try F.policy("{}")], options: EngineOptions())
        #expect(report.incompleteRuns.map(\.id) == [Self.killed])
        #expect(report.text.contains("1 of 5 lines skipped (line 5: not a JSON object)"), "\(report.text)")
    }

    @Test func aRunInAFileReadInPartsIsOneRun() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("big.log").path
        var lines = [Self.start(Self.killed, time: "2026-11-23T09:00:00.000Z")]
        for second in 0..<400 {
            lines.append(Self.decision(Self.killed, time: String(format: "2026-11-23T09:%02d:%02d.000Z", second / 60, second % 60)))
            if second % 50 == 49 {
                lines.append(Self.checkpoint(Self.killed, time: String(format: "2026-11-23T09:%02d:%02d.500Z", second / 60, second % 60),
                                             records: second + 1, open: second / 50))
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let once = try TrafficSummary.read([path], parallelism: 1)
        let split = try TrafficSummary.read([path], parallelism: 4, parallelMinimum: 0)
        for summary in [once, split] {
            let run = try #require(summary.runs.first)
            #expect(summary.runs.count == 1 && run.decisions == 400 && run.checkpoints == 8)
            #expect(run.lastCheckpoint?.open == 7 && run.start != nil)
            #expect(Timestamp.text(run.lastTime) == "2026-11-23T09:06:39.500Z", "the last checkpoint is its last record")
        }
    }

    /// A log of a daemon before the ledger, or records that name a run but no ledger record at all:
    /// the report is what it was (no runs in the JSON, no notes).
    @Test func logsWithoutLedgerRecordsAreJudgedAsBefore() throws {
        for lines in [[F.record("http", "api.example.com", 80)], [Self.decision(Self.killed, time: "2026-11-23T09:00:01.000Z")]] {
            let report = try F.report("{}", lines)
            #expect(!report.isIncomplete && report.runNotes.isEmpty)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [String: Any])
            #expect(json["runs"] == nil && json["incomplete_runs"] == nil)
            #expect((json["inputs"] as? [[String: Any]])?.first?["ledger_records"] == nil)
        }
    }

    @Test func aReportWithRunsServesAsABaseline() throws {
        let directory = try F.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("baseline.json").path
        try F.report("{}", Self.killedRun + [F.record("http", "legacy.example.com", 80, action: "block", reason: "cleartext-http",
                                                      extra: #","run":"\#(Self.killed)""#)])
            .jsonText.write(toFile: path, atomically: true, encoding: .utf8)
        let baseline = try Baseline.load(path)
        let again = try F.report("{}", Self.cleanRun + [F.record("http", "legacy.example.com", 80, action: "block", reason: "cleartext-http")],
                                 settings: ReportSettings(baseline: baseline))
        #expect(!again.fails, "the block is unchanged since the baseline")
    }
}
