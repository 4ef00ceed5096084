/// What happens when the decision log's reader cannot keep up and its buffer is full
/// (`--log-overflow`).
public enum LogOverflow: String, Sendable, CaseIterable {
    /// Records that do not fit are counted (metric, warning, a `log-overflow` record) and lost.
    case drop
    /// Nothing is lost: the proxy stops accepting and reading new requests until the log drains.
    case pause
}

/// The records handed to a log's writer and not yet written, bounded in bytes, and the count of those
/// lost. A value, kept under the writer's lock; it does no I/O, so its rules are tested alone:
/// - a batch that fits is taken (an empty buffer takes any batch, so a large one never waits for
///   ever); at a stop every batch is taken (`force`), the grace period bounds the wait instead;
/// - one that does not fit is dropped and counted (`drop`), or refused and the buffer is paused
///   until the writer has brought it down to half (`pause`);
/// - what the writer fails to write is dropped and counted too (`drop`), or kept and tried again
///   (`pause`: the buffer does not drain, so it fills and pauses the proxy).
package struct LogBuffer {
    package let capacity: Int
    package let overflow: LogOverflow
    /// Handed over, waiting for the writer.
    private(set) var waiting: [LogBatch] = []
    /// Bytes and records held: the waiting batches and those the writer took and has not finished.
    private(set) var bytes = 0
    private(set) var records = 0
    /// Records lost since the start (the metric) and since the last overflow record was written.
    private(set) var droppedTotal = 0
    private(set) var unreported = 0
    /// Why records were last lost: the overflow record's and the warning's message.
    private(set) var cause = ""
    /// Why the last write failed; nil once one succeeds.
    package var failure: String?
    /// Set while a refused batch waits (`pause`), and how many times that began.
    private(set) var paused = false
    private(set) var pauses = 0
    /// Line buffers the writer has emptied, handed back to the loops for their next batches (a fresh
    /// array would grow by reallocation up to the hand-over size each time).
    private var spares: [[UInt8]] = []

    package enum Offer: Equatable {
        case taken
        case dropped
        case refused
    }

    package init(capacity: Int, overflow: LogOverflow) {
        self.capacity = capacity
        self.overflow = overflow
    }

    /// A loop's batch. Taken or dropped, `batch` is left empty for the next records; refused, it is
    /// left as it was, for the loop to keep and offer again.
    package mutating func offer(_ batch: inout LogBatch, force: Bool = false) -> Offer {
        guard !batch.isEmpty else { return .taken }
        if force || bytes == 0 || bytes + batch.size <= capacity {
            bytes += batch.size
            records += batch.records
            var next = LogBatch()
            if let spare = spares.popLast() { next.lines = spare }
            swap(&next, &batch)
            waiting.append(next)
            return .taken
        }
        switch overflow {
        case .drop:
            lose(batch.records, cause: "the log's reader did not keep up and its buffer "
                 + "(\(LogBuffer.describe(bytes: capacity)), --log-buffer) was full")
            batch.removeAll()
            return .dropped
        case .pause:
            if !paused { pauses += 1 }
            paused = true
            return .refused
        }
    }

    /// The waiting batches, for the writer; they stay counted in `bytes` until released.
    package mutating func take() -> [LogBatch] {
        var taken: [LogBatch] = []
        swap(&taken, &waiting)
        return taken
    }

    /// The writer has written, or lost and counted, `bytes` and `records` of what it took.
    package mutating func release(bytes: Int, records: Int) {
        self.bytes -= bytes
        self.records -= records
        if paused, self.bytes <= capacity / 2 { paused = false }
    }

    /// An emptied batch's line storage, for a loop's next batch.
    package mutating func recycle(_ lines: inout [UInt8]) {
        guard spares.count < 8, lines.capacity > 0 else { return }
        lines.removeAll(keepingCapacity: true)
        var storage: [UInt8] = []
        swap(&storage, &lines)
        spares.append(storage)
    }

    package mutating func lose(_ count: Int, cause: String) {
        guard count > 0 else { return }
        droppedTotal += count
        unreported += count
        self.cause = cause
    }

    /// An overflow record saying `count` were lost has been written.
    package mutating func reported(_ count: Int) {
        unreported -= count
    }

    /// "16 MiB", "64 KiB", "1000 bytes".
    package static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
