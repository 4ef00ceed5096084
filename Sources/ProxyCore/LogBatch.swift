/// Decision records on their way to the log: a loop gathers them here (JSON or text lines, or journal
/// entries) and hands the whole batch to the log's writer. What the log loses is counted in records,
/// so the batch says how many it holds.
package struct LogBatch {
    var lines: [UInt8] = []
    var entries: [StructuredEntry] = []
    /// What `entries` weigh against the log's bound: their messages, names and values in bytes.
    var entryBytes = 0
    /// Decision records held (each line, each entry); the overflow record is not one.
    var records = 0

    /// A loop hands its batch over at this size, besides on every clock tick.
    static let handOverSize = 16 * 1024

    var size: Int { lines.count + entryBytes }
    var isEmpty: Bool { records == 0 && lines.isEmpty && entries.isEmpty }

    /// Adds one structured (journal) entry.
    mutating func append(_ entry: StructuredEntry) {
        entries.append(entry)
        entryBytes += entry.size
        records += 1
    }

    /// Empties the batch and keeps its storage for the next records.
    mutating func removeAll() {
        lines.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        entryBytes = 0
        records = 0
    }
}

/// One journal entry as a `StructuredLogWriter` takes it.
struct StructuredEntry {
    var message: String
    var priority: Int32
    var fields: [(String, String)]

    var size: Int { fields.reduce(message.utf8.count) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 } }
}
