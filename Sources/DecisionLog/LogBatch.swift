/// Decision records on their way to the log: a loop gathers them here (JSON or text lines, or journal
/// entries) and hands the whole batch to the log's writer. What the log loses is counted in records,
/// so the batch says how many it holds.
package struct LogBatch {
    package init() {}

    package var lines: [UInt8] = []
    package var entries: [StructuredEntry] = []
    /// What `entries` weigh against the log's bound: their messages, names and values in bytes.
    package var entryBytes = 0
    /// Decision records held (each line, each entry); the overflow record is not one.
    package var records = 0

    /// A loop hands its batch over at this size, besides on every clock tick.
    package static let handOverSize = 16 * 1024

    package var size: Int { lines.count + entryBytes }
    package var isEmpty: Bool { records == 0 && lines.isEmpty && entries.isEmpty }

    /// Adds one structured (journal) entry.
    package mutating func append(_ entry: StructuredEntry) {
        entries.append(entry)
        entryBytes += entry.size
        records += 1
    }

    /// Empties the batch and keeps its storage for the next records.
    package mutating func removeAll() {
        lines.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        entryBytes = 0
        records = 0
    }
}

/// One journal entry as a `StructuredLogWriter` takes it.
package struct StructuredEntry {
    package var message: String
    package var priority: Int32
    package var fields: [(String, String)]

    package var size: Int { fields.reduce(message.utf8.count) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 } }
}
