import Dispatch
import Foundation
import Glibc
import Testing
import LogTestSupport
import POSIX
import TestSupport
@testable import DecisionLog

/// A log sink's writer thread with real outputs: a journal writer that stops (the journal sink
/// behind the same bounded buffer), /dev/full (every write fails with ENOSPC), and a file moved away
/// and reopened. The loops' side is the test thread handing batches over, as a loop does on its tick.
@Suite(.serialized) struct LogSinkTests {
    /// One journal entry per record, numbered, as RecordFormatter makes them.
    private func journalBatch(_ numbers: Range<Int>) -> LogBatch {
        var batch = LogBatch()
        for number in numbers {
            batch.append(StructuredEntry(message: "record \(number)", priority: 6,
                                         fields: [("ATS_ACTION", "block"), ("ATS_N", "\(number)"),
                                                  ("ATS_PADDING", String(repeating: "p", count: 200))]))
        }
        return batch
    }

    private func lineBatch(_ numbers: Range<Int>) -> LogBatch {
        var batch = LogBatch()
        for number in numbers { batch.lines += Array("{\"n\":\(number)}\n".utf8) }
        batch.records = numbers.count
        return batch
    }

    /// Hands `count` records over in batches of `size` from a queue standing for a loop; returns
    /// once every offer has returned (bounded: a loop that blocked on the log would never return).
    private func handOver(_ count: Int, size: Int, to sink: LogSink, journal: Bool) throws {
        let loop = DispatchQueue(label: "test.loop")
        let done = DispatchSemaphore(value: 0)
        loop.async {
            for start in stride(from: 0, to: count, by: size) {
                let range = start..<min(count, start + size)
                var batch = journal ? journalBatch(range) : lineBatch(range)
                sink.offer(&batch)
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success else {
            throw HarnessError("handing records to a stalled log did not return: the loop is blocked")
        }
    }

    @Test func aStalledJournalDelaysNoLoopAndEveryLostRecordIsCounted() throws {
        let log = MemoryLog()
        let sink = log.sink(overflow: .drop, capacity: 4096)
        log.stall()
        try handOver(200, size: 5, to: sink, journal: true)
        #expect(sink.state.droppedTotal > 0, "the stalled journal held the writer; the buffer filled and dropped")
        #expect(!sink.isPaused, "drop never holds the proxy back")

        log.resume()
        #expect(sink.drain(within: 30, closing: true) == 0)
        let entries = log.records
        let decisions = entries.filter { $0["reason"] != "log-overflow" }
        let overflow = entries.filter { $0["reason"] == "log-overflow" }
        let dropped = overflow.compactMap { $0["dropped"].flatMap(Int.init) }.reduce(0, +)
        #expect(decisions.count + dropped == 200, "records read plus dropped equal records made")
        #expect(dropped == sink.state.droppedTotal)
        let last = try #require(entries.last)
        #expect(last["action"] == "error" && last["reason"] == "log-overflow", "\(last)")
        #expect(last["dropped_total"] == "\(dropped)")
        // The numbers that arrived arrived once each, in order.
        let numbers = decisions.compactMap { $0["n"].flatMap(Int.init) }
        #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count)
    }

    @Test func whatTheBufferHoldsStaysWithinASmallLogBuffer() throws {
        let log = MemoryLog()
        let sink = log.sink(overflow: .drop, capacity: 4096)
        let formatter = RecordFormatter(format: .journal, policy: "p", sink: sink)
        log.stall()
        var batch = LogBatch()
        var record = DecisionRecord(time: 0, client: SocketAddress(ip: .v4(0x7F00_0001), port: 1), method: "GET")
        record.message = String(repeating: "m", count: 100)
        var most = 0
        for _ in 0..<400 {
            formatter.write(record, into: &batch)
            most = max(most, sink.state.bufferedBytes)
        }
        #expect(sink.state.droppedTotal > 0, "the stalled journal filled the buffer")
        #expect(most <= 4096, "buffered bytes (atsgate_log_buffered_bytes) never exceed --log-buffer: \(most)")
        log.resume()
        #expect(sink.drain(within: 30, closing: true) == 0)
    }

    @Test func pauseKeepsEveryJournalEntryAndHoldsTheLoopsBack() throws {
        let log = MemoryLog()
        let sink = log.sink(overflow: .pause, capacity: 4096)
        log.stall()
        var batch = LogBatch()
        var next = 0
        // A loop offers until the log refuses and pauses it (bounded: the buffer is 4 KiB).
        while !sink.isPaused, next < 10_000 {
            batch = journalBatch(next..<(next + 5))
            next += 5
            sink.offer(&batch)
        }
        #expect(sink.isPaused, "the full log pauses the proxy")
        #expect(batch.records == 5, "the refused batch stays with the loop")
        #expect(sink.state.droppedTotal == 0)

        log.resume()
        let deadline = Date().addingTimeInterval(30)
        while !batch.isEmpty, Date() < deadline {
            sink.offer(&batch) // the loop's tick, until the log takes it
            usleep(10_000)
        }
        #expect(sink.drain(within: 30, closing: true) == 0)
        #expect(!sink.isPaused)
        let numbers = log.records.compactMap { $0["n"].flatMap(Int.init) }
        #expect(numbers == Array(0..<next), "every record kept, in order")
        #expect(!log.records.contains { $0["reason"] == "log-overflow" })
    }

    /// /dev/full fails every write with ENOSPC: the records are counted as dropped (and said), the
    /// loops never wait; under pause nothing is dropped and the log holds the proxy back instead.
    @Test(arguments: [LogOverflow.drop, .pause])
    func failedWritesFollowTheOverflowRule(_ overflow: LogOverflow) throws {
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let warnings = Warnings()
        let sink = LogSink(fd: fd, overflow: overflow, capacity: 4096, warn: warnings.add)
        try handOver(overflow == .drop ? 300 : 20, size: 10, to: sink, journal: false)
        switch overflow {
        case .drop:
            sink.drain(within: 30)
            #expect(sink.state.droppedTotal == 300, "every record lost, and counted")
            #expect(sink.state.failure?.contains("No space left on device") == true, "\(String(describing: sink.state.failure))")
            // The warning comes at most once a second, from its own queue.
            let deadline = Date().addingTimeInterval(10)
            while warnings.lines.isEmpty, Date() < deadline { usleep(20_000) }
            #expect(warnings.lines.first?.contains("No space left on device") == true, "\(warnings.lines)")
        case .pause:
            #expect(sink.state.droppedTotal == 0)
            #expect(sink.drain(within: 0.5) == 20, "kept, to be tried again")
            var more = lineBatch(0..<1000) // more than the 4 KiB left
            sink.offer(&more)
            #expect(more.records == 1000, "refused, kept by the loop")
            #expect(sink.isPaused, "the records it cannot write fill the buffer and pause the proxy")
        }
    }

    /// An upgrade's two processes write to the standard output both inherited, here a pipe: with the
    /// output shared, each writes whole lines in writes the kernel never splits or interleaves, so
    /// a reader that falls behind (the pipe full, both writers waiting) still reads every line whole.
    @Test func twoWritersSharingAPipeNeverTearALine() throws {
        var pair: [Int32] = [-1, -1]
        #expect(pipe(&pair) == 0)
        let fds = pair
        let sinks = (0..<2).map { _ in LogSink(fd: fds[1], format: .json) }
        for sink in sinks { sink.setSharedOutput(true) }
        let padding = String(repeating: "p", count: 900)
        nonisolated(unsafe) var received: [UInt8] = []
        let reader = DispatchQueue(label: "test.reader")
        let done = DispatchSemaphore(value: 0)
        reader.async {
            var buffer = [UInt8](repeating: 0, count: 1000)
            while true {
                usleep(200) // slower than the writers: the pipe stays full
                let n = read(fds[0], &buffer, buffer.count)
                if n <= 0 { break }
                received += buffer[..<n]
            }
            done.signal()
        }
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            for start in stride(from: 0, to: 300, by: 30) {
                var batch = LogBatch()
                for number in start..<(start + 30) { batch.lines += Array("{\"w\":\(writer),\"n\":\(number),\"p\":\"\(padding)\"}\n".utf8) }
                batch.records = 30
                sinks[writer].offer(&batch, force: true)
            }
            _ = sinks[writer].drain(within: 60)
        }
        close(fds[1])
        #expect(done.wait(timeout: .now() + 60) == .success)
        close(fds[0])
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 600)
        for writer in 0..<2 {
            let numbers = lines.compactMap { line -> Int? in
                guard let match = line.wholeMatch(of: /\{"w":(\d),"n":(\d+),"p":"p{900}"\}/), Int(match.1) == writer else { return nil }
                return Int(match.2)
            }
            let torn = Set(0..<300).subtracting(numbers).sorted()
            #expect(torn.isEmpty && numbers == numbers.sorted(), "writer \(writer)'s lines, each whole and in its order; torn: \(torn.prefix(5))")
        }
    }

    @Test func aMovedFileIsReopenedAndNoRecordIsLostBetweenTheTwo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("decisions.log").path
        let sink = try LogSink(file: path, format: .json)
        try handOver(10, size: 5, to: sink, journal: false)
        sink.drain(within: 30)
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        var between = lineBatch(10..<20)
        sink.offer(&between)
        sink.drain(within: 30)
        sink.reopen()
        var after = lineBatch(20..<30)
        sink.offer(&after)
        sink.drain(within: 30)
        func numbers(_ file: String) throws -> [Int] {
            try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
                .map { try #require(Int($0.dropFirst(5).dropLast())) }
        }
        #expect(try numbers(path + ".1") == Array(0..<20), "what came before the reopen stays in the moved file")
        #expect(try numbers(path) == Array(20..<30), "and then the records continue in the new one")
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o640)
    }

    @Test func theOverflowRecordInEachFormat() throws {
        let record = LogOverflowRecord(time: 1_795_000_000.5, dropped: 3, droppedTotal: 7, cause: "a full disk")
        let json = record.batch(format: .json, structured: false)
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.lines.dropLast())) as? [String: Any])
        #expect(object["action"] as? String == "error")
        #expect(object["reason"] as? String == "log-overflow")
        #expect(object["dropped"] as? Int == 3)
        #expect(object["dropped_total"] as? Int == 7)
        #expect(object["time"] as? String == "2026-11-18T11:06:40.500Z")
        #expect(object["message"] as? String == "3 decision records were not written: a full disk")
        #expect(json.records == 0, "not a decision record")
        #expect(json.lines.last == 0x0A)

        let text = String(decoding: record.batch(format: .text, structured: false).lines, as: UTF8.self)
        #expect(text == "2026-11-18T11:06:40.500Z - ERROR log-overflow dropped=3 run=\(LogRun.id): 3 decision records were not "
                + "written: a full disk\n")

        let journal = try #require(record.batch(format: .journal, structured: true).entries.first)
        #expect(journal.priority == 4)
        let fields = Dictionary(journal.fields, uniquingKeysWith: { first, _ in first })
        #expect(fields["ATS_REASON"] == "log-overflow" && fields["ATS_DROPPED"] == "3" && fields["ATS_ACTION"] == "error")
    }
}

/// Warnings a sink said, kept for the test.
private final class Warnings: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    var lines: [String] { lock.withLock { kept } }
    var add: @Sendable (String) -> Void { { [self] line in lock.withLock { kept.append(line) } } }
}
