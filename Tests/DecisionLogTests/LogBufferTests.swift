import Testing
@testable import DecisionLog

/// The bounded buffer between the loops and a log's writer thread: what fits is taken, what does
/// not is dropped and counted (drop) or refused until the writer has drained half (pause).
@Suite struct LogBufferTests {
    private func batch(records: Int, bytesEach: Int = 10) -> LogBatch {
        var batch = LogBatch()
        for _ in 0..<records { batch.lines += [UInt8](repeating: UInt8(ascii: "x"), count: bytesEach - 1) + [0x0A] }
        batch.records = records
        return batch
    }

    @Test func dropCountsTheRecordsOfABatchThatDoesNotFit() {
        var buffer = LogBuffer(capacity: 100, overflow: .drop)
        var first = batch(records: 6)
        #expect(buffer.offer(&first) == .taken)
        #expect(first.isEmpty, "a taken batch leaves the loop an empty one")
        var second = batch(records: 5)
        #expect(buffer.offer(&second) == .dropped)
        #expect(second.isEmpty, "a dropped batch is gone too: the loop goes on")
        #expect(buffer.droppedTotal == 5)
        #expect(buffer.unreported == 5)
        #expect(buffer.cause.contains("--log-buffer"), "\(buffer.cause)")
        #expect(buffer.bytes == 60 && buffer.records == 6)

        var taken = buffer.take()
        #expect(taken.map(\.records) == [6])
        #expect(buffer.records == 6, "what the writer holds still counts against the bound")
        buffer.release(bytes: taken[0].size, records: taken[0].records)
        buffer.recycle(&taken[0].lines)
        var third = batch(records: 5)
        #expect(buffer.offer(&third) == .taken)
        #expect(third.lines.capacity >= 60, "the loop gets the written batch's storage back")
        buffer.reported(5)
        #expect(buffer.unreported == 0 && buffer.droppedTotal == 5)
    }

    @Test func anEmptyBufferTakesABatchLargerThanItsBoundAndAStopTakesEverything() {
        var buffer = LogBuffer(capacity: 50, overflow: .drop)
        var large = batch(records: 8)
        #expect(buffer.offer(&large) == .taken)
        var more = batch(records: 1)
        #expect(buffer.offer(&more) == .dropped)
        var last = batch(records: 3)
        #expect(buffer.offer(&last, force: true) == .taken)
        #expect(buffer.records == 11 && buffer.droppedTotal == 1)
    }

    @Test func pauseRefusesAndHoldsTheLoopBackUntilHalfIsWritten() {
        var buffer = LogBuffer(capacity: 100, overflow: .pause)
        var first = batch(records: 8)
        #expect(buffer.offer(&first) == .taken)
        var second = batch(records: 4)
        #expect(buffer.offer(&second) == .refused)
        #expect(second.records == 4, "a refused batch stays with the loop, whole")
        #expect(buffer.paused && buffer.pauses == 1 && buffer.droppedTotal == 0)
        #expect(buffer.offer(&second) == .refused)
        #expect(buffer.pauses == 1, "still the same pause")

        _ = buffer.take()
        buffer.release(bytes: 20, records: 2)
        #expect(buffer.paused, "60 of 100 bytes held: not yet half")
        buffer.release(bytes: 20, records: 2)
        #expect(!buffer.paused, "40 of 100: the loops go on")
        #expect(buffer.offer(&second) == .taken)
        #expect(buffer.droppedTotal == 0)
    }

    @Test func writeFailuresCountAsDroppedWithTheirCause() {
        var buffer = LogBuffer(capacity: 100, overflow: .drop)
        buffer.lose(3, cause: "writing to /var/log/x failed: No space left on device")
        buffer.lose(0, cause: "nothing")
        #expect(buffer.droppedTotal == 3 && buffer.unreported == 3)
        #expect(buffer.cause == "writing to /var/log/x failed: No space left on device")
    }
}
