import ATSPolicy
import Foundation
import Glibc
import LogTestSupport
import POSIX
import Testing
@testable import DecisionLog

/// The run ledger as the log's writer thread writes it: the run-start before any decision, a
/// checkpoint each time the ledger's clock passes the interval (the test moves the clock and lets
/// `drain` wait for the writer, nothing sleeps), the run-stop last, and `run` on every record.
@Suite(.serialized) struct RunLedgerTests {
    /// A clock only the test moves, so that no checkpoint falls due by itself while a test runs
    /// (EventLoops' MovableClock follows the real clock as well).
    final class ManualClock: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 1000.0
        var now: @Sendable () -> Double { { [self] in lock.withLock { value } } }
        func advance(by seconds: Double) { lock.withLock { value += seconds } }
    }

    /// What the proxy says at a checkpoint, as the test sets it.
    final class Status: @unchecked Sendable {
        private let lock = NSLock()
        private var open = 0
        func set(open: Int) { lock.withLock { self.open = open } }
        var read: @Sendable () -> RunStatus { { [self] in RunStatus(open: lock.withLock { open }, generation: 2) } }
    }

    /// A JSON log file in a directory of its own.
    final class LogFile {
        let directory: URL
        let path: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-ledger-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("decisions.log").path
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        var lines: [[String: Any]] {
            get throws {
                try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
                }
            }
        }

        var ledger: [[String: Any]] { get throws { try lines.filter { $0["ledger"] != nil } } }
    }

    private static func records(_ count: Int, into sink: LogSink) {
        let formatter = RecordFormatter(format: .json, policy: "p", sink: sink)
        var batch = LogBatch()
        for number in 0..<count {
            formatter.write(DecisionRecord(time: 1_795_000_000, client: SocketAddress(ip: .v4(0x7F00_0001), port: 40000 + number),
                                           method: "GET", action: .error, reason: .badRequest), into: &batch)
        }
        sink.offer(&batch)
    }

    @Test func theRunStartComesFirstAndEveryRecordCarriesTheRun() throws {
        let file = try LogFile()
        let sink = try LogSink(file: file.path, format: .json)
        let clock = ManualClock()
        sink.startRun(RunStart(version: "9.8.7", checkpointSeconds: 10), status: Status().read, clock: clock.now)
        Self.records(3, into: sink)
        #expect(sink.drain(within: 30) == 0)
        let lines = try file.lines
        #expect(lines.count == 4)
        let start = try #require(lines.first)
        #expect(start["ledger"] as? String == "run-start")
        #expect(start["run"] as? String == LogRun.id)
        #expect(start["pid"] as? Int == Int(getpid()))
        #expect(start["version"] as? String == "9.8.7")
        #expect(start["generation"] as? Int == 1 && start["checkpoint_s"] as? Int == 10)
        #expect(start["predecessor_run"] == nil, "no upgrade: no predecessor fields")
        #expect(start["action"] == nil && start["reason"] == nil && start["rule"] == nil, "not a decision: \(start)")
        #expect((start["message"] as? String)?.hasPrefix("atsgate run \(LogRun.id) started (9.8.7, PID \(getpid()))") == true)
        #expect(lines.allSatisfy { $0["run"] as? String == LogRun.id }, "every record names the run")
        #expect(LogRun.id.count == 16 && LogRun.id.allSatisfy { "0123456789abcdef".contains($0) })
    }

    @Test func checkpointsFollowTheClockAndCountWhatWasWritten() throws {
        let file = try LogFile()
        let sink = try LogSink(file: file.path, format: .json)
        let clock = ManualClock()
        let status = Status()
        status.set(open: 3)
        sink.startRun(RunStart(version: "1.0", checkpointSeconds: 10), status: status.read, clock: clock.now)
        Self.records(5, into: sink)
        sink.drain(within: 30)
        clock.advance(by: 9.9)
        sink.drain(within: 30)
        #expect(try file.ledger.count == 1, "before the interval: the run-start only")

        clock.advance(by: 0.1)
        sink.drain(within: 30)
        var ledger = try file.ledger
        let first = try #require(ledger.last)
        #expect(ledger.count == 2 && first["ledger"] as? String == "run-checkpoint", "\(ledger)")
        #expect(first["records"] as? Int == 5 && first["dropped"] as? Int == 0)
        #expect(first["open"] as? Int == 3 && first["generation"] as? Int == 2)
        #expect(first["version"] as? String == "1.0" && first["pid"] as? Int == Int(getpid()))
        #expect(first["action"] == nil && first["reason"] == nil && first["rule"] == nil)

        // Three intervals pass at once (a writer that was stalled): one checkpoint, the next a full
        // interval later.
        Self.records(2, into: sink)
        status.set(open: 1)
        clock.advance(by: 25)
        sink.drain(within: 30)
        ledger = try file.ledger
        #expect(ledger.count == 3, "one checkpoint, not a burst: \(ledger)")
        #expect(ledger.last?["records"] as? Int == 7 && ledger.last?["open"] as? Int == 1)
        clock.advance(by: 9)
        sink.drain(within: 30)
        #expect(try file.ledger.count == 3)
        clock.advance(by: 1)
        sink.drain(within: 30)
        #expect(try file.ledger.count == 4)

        #expect(sink.drain(within: 30, closing: true, stop: RunStop(cut: 2)) == 0)
        let lines = try file.lines
        let stop = try #require(lines.last)
        #expect(stop["ledger"] as? String == "run-stop", "the last record")
        #expect(stop["records"] as? Int == 7 && stop["dropped"] as? Int == 0 && stop["open"] as? Int == 2)
        #expect(stop["stop"] as? String == "signal")
        #expect(stop["successor_run"] == nil && stop["handed_over"] == nil)
        #expect(lines.filter { $0["ledger"] == nil }.count == 7)
        clock.advance(by: 60)
        sink.drain(within: 30)
        #expect(try file.lines.count == lines.count, "nothing after the run-stop")
    }

    @Test func noCheckpointsAtZero() throws {
        let file = try LogFile()
        let sink = try LogSink(file: file.path, format: .json)
        let clock = ManualClock()
        sink.startRun(RunStart(version: "1.0", checkpointSeconds: 0), status: Status().read, clock: clock.now)
        Self.records(1, into: sink)
        clock.advance(by: 3600)
        sink.drain(within: 30, closing: true, stop: RunStop(cut: 0))
        #expect(try file.ledger.map { $0["ledger"] as? String } == ["run-start", "run-stop"])
        #expect(try file.ledger.first?["checkpoint_s"] as? Int == 0)
        #expect(try file.ledger.first?["message"] as? String == "atsgate run \(LogRun.id) started (1.0, PID \(getpid())); "
                + "no checkpoints (--log-checkpoint 0)")
    }

    /// A record lost to overflow is counted as dropped, never as written: records plus dropped add up
    /// to the decisions made, at the checkpoint and at the stop, whose run-stop follows the closing
    /// overflow record.
    @Test func recordsLostToOverflowAreCountedAsDroppedNotWritten() throws {
        let log = MemoryLog()
        let sink = log.sink(overflow: .drop, capacity: 4096)
        let clock = ManualClock()
        sink.startRun(RunStart(version: "1.0", checkpointSeconds: 10), status: Status().read, clock: clock.now)
        sink.drain(within: 30)
        log.stall()
        for start in stride(from: 0, to: 200, by: 5) {
            var batch = LogBatch()
            for number in start..<(start + 5) {
                batch.append(StructuredEntry(message: "record \(number)", priority: 6,
                                             fields: [("ATS_ACTION", "block"), ("ATS_N", "\(number)"),
                                                      ("ATS_PADDING", String(repeating: "p", count: 200))]))
            }
            sink.offer(&batch)
        }
        #expect(sink.state.droppedTotal > 0)
        log.resume()
        sink.drain(within: 30)
        clock.advance(by: 10)
        sink.drain(within: 30)
        let written = log.records
        let at = try #require(written.lastIndex { $0["ledger"] == "run-checkpoint" })
        let checkpoint = written[at]
        let decisions = written.filter { $0["ledger"] == nil && $0["reason"] != "log-overflow" }.count
        #expect(written[..<at].filter { $0["ledger"] == nil && $0["reason"] != "log-overflow" }.count == decisions,
                "everything was written before the clock moved")
        #expect(Int(checkpoint["records"] ?? "") == decisions)
        #expect(Int(checkpoint["dropped"] ?? "") == sink.state.droppedTotal)
        #expect(decisions + sink.state.droppedTotal == 200)

        sink.drain(within: 30, closing: true, stop: RunStop(cut: 0))
        let entries = log.records
        let stop = try #require(entries.last)
        #expect(stop["ledger"] == "run-stop")
        #expect(entries.dropLast().last?["reason"] == "log-overflow", "the closing overflow record, then the run-stop")
        #expect(Int(stop["records"] ?? "") == decisions && Int(stop["dropped"] ?? "") == sink.state.droppedTotal)
    }

    @Test func anUpgradeNamesBothProcesses() throws {
        let log = MemoryLog()
        let sink = log.sink
        let old = RunPeer(run: "00000000000000aa", pid: 4242, version: "0.9.0")
        let new = RunPeer(run: "00000000000000bb", pid: 4343, version: "1.1.0")
        sink.startRun(RunStart(version: "1.0", checkpointSeconds: 10, predecessor: old), status: Status().read,
                      clock: ManualClock().now)
        sink.drain(within: 30, closing: true, stop: RunStop(cut: 1, handOver: RunHandOver(successor: new, handedOver: 6)))
        let start = try #require(log.records.first)
        #expect(start["ledger"] == "run-start" && start["run"] == LogRun.id)
        #expect(start["predecessor_run"] == "00000000000000aa" && start["predecessor_pid"] == "4242"
                && start["predecessor_version"] == "0.9.0")
        let stop = try #require(log.records.last)
        #expect(stop["ledger"] == "run-stop" && stop["stop"] == "upgrade")
        #expect(stop["successor_run"] == "00000000000000bb" && stop["successor_pid"] == "4343"
                && stop["successor_version"] == "1.1.0")
        #expect(stop["handed_over"] == "6" && stop["open"] == "1")
    }

    /// A library user's sink (and the proxy in tests) starts no run: no ledger records, even at a
    /// stop; a run stopped without saying how (a second SIGTERM, connections cut unlogged) has no
    /// run-stop.
    @Test(arguments: [false, true])
    func withoutARunOrAStopTheLedgerSaysNothing(started: Bool) throws {
        let file = try LogFile()
        let sink = try LogSink(file: file.path, format: .json)
        if started { sink.startRun(RunStart(version: "1.0", checkpointSeconds: 10), status: Status().read, clock: ManualClock().now) }
        Self.records(2, into: sink)
        sink.drain(within: 30, closing: true, stop: started ? nil : RunStop(cut: 0))
        #expect(try file.ledger.map { $0["ledger"] as? String } == (started ? ["run-start"] : []))
        #expect(try file.lines.filter { $0["ledger"] == nil }.count == 2)
    }

    @Test func theLedgerInEachFormat() throws {
        let peer = RunPeer(run: "00000000000000bb", pid: 99, version: "2.0")
        let stop = LedgerRecord(time: 1_795_000_000.5, version: "1.0",
                                event: .stop(records: 12, dropped: 3, RunStop(cut: 1, handOver: RunHandOver(successor: peer, handedOver: 4))))
        let json = stop.batch(format: .json, structured: false)
        #expect(json.records == 0, "not a decision record")
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.lines.dropLast())) as? [String: Any])
        #expect(Array(String(decoding: json.lines, as: UTF8.self).utf8.prefix(9)) == Array(#"{"time":""#.utf8))
        #expect(object["time"] as? String == "2026-11-18T11:06:40.500Z")
        #expect(object["ledger"] as? String == "run-stop" && object["stop"] as? String == "upgrade")
        #expect(object["message"] as? String == "atsgate run \(LogRun.id) handed over to run 00000000000000bb (2.0, PID 99) "
                + "with 4 connections: 12 decision records written, 3 lost, 1 connection cut at the stop")

        let text = String(decoding: stop.batch(format: .text, structured: false).lines, as: UTF8.self)
        #expect(text == "2026-11-18T11:06:40.500Z - LEDGER run-stop run=\(LogRun.id) pid=\(getpid()) version=1.0 records=12 "
                + "dropped=3 open=1 stop=upgrade successor_run=00000000000000bb successor_pid=99 successor_version=2.0 "
                + "handed_over=4: \(object["message"] as! String)\n")

        let start = LedgerRecord(time: 1_795_000_000, version: "1.0", event: .start(RunStart(version: "1.0", checkpointSeconds: 10)))
        let entry = try #require(start.batch(format: .journal, structured: true).entries.first)
        #expect(entry.message == "atsgate run \(LogRun.id) started (1.0, PID \(getpid())); a checkpoint every 10 s")
        #expect(entry.priority == 6)
        let fields = Dictionary(entry.fields, uniquingKeysWith: { first, _ in first })
        #expect(fields["ATS_LEDGER"] == "run-start" && fields["ATS_RUN"] == LogRun.id && fields["ATS_PID"] == "\(getpid())")
        #expect(fields["ATS_CHECKPOINT_S"] == "10" && fields["ATS_VERSION"] == "1.0")
        #expect(fields["ATS_ACTION"] == nil && fields["ATS_REASON"] == nil)
    }

    @Test func decisionAndOverflowRecordsNameTheRunInEveryFormat() throws {
        let record = DecisionRecord(time: 1_795_000_000, client: SocketAddress(ip: .v4(0x7F00_0001), port: 1),
                                    method: "GET", action: .error, reason: .badRequest)
        let journal = Dictionary(record.journalFields(policy: "p"), uniquingKeysWith: { first, _ in first })
        #expect(journal["ATS_RUN"] == LogRun.id)
        let text = RecordFormatter(format: .text, policy: "p", sink: LogSink(fd: -1))
        var batch = LogBatch()
        text.write(record, into: &batch)
        #expect(String(decoding: batch.lines, as: UTF8.self).contains(" 0ms run=\(LogRun.id)"))
        #expect(!record.text(policy: "p").contains("run="), "the journal's MESSAGE leaves it to ATS_RUN")
        let overflow = LogOverflowRecord(time: 0, dropped: 1, droppedTotal: 1, cause: "c").batch(format: .json, structured: false)
        let object = try #require(JSONSerialization.jsonObject(with: Data(overflow.lines.dropLast())) as? [String: Any])
        #expect(object["run"] as? String == LogRun.id)
    }
}
