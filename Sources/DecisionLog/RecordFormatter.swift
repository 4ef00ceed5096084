import ATSPolicy

/// Formats decision records for one configuration generation (its format and policy name) into
/// the calling loop's batch, which goes to the shared sink's writer thread at 16 KiB (less for a small
/// --log-buffer: `LogSink.handOverSize`) and on the loop's clock tick: a record costs no thread
/// hand-off and no system call.
package final class RecordFormatter: Sendable {
    package let format: LogFormat
    package let policy: String
    private let sink: LogSink
    private let handOverSize: Int

    package init(format: LogFormat, policy: String, sink: LogSink) {
        self.format = format
        self.policy = policy
        self.sink = sink
        handOverSize = sink.handOverSize
    }

    /// Formats the record into `batch` (the calling loop's), handing the batch over when it is full.
    package func write(_ record: DecisionRecord, into batch: inout LogBatch) {
        switch format {
        case .json:
            appendJSON(record, to: &batch.lines)
        case .text:
            batch.lines += record.text(policy: policy, run: LogRun.id).utf8
        case .journal:
            guard sink.structured != nil else {
                // No journal wired in (a library user): fall back to JSON lines.
                appendJSON(record, to: &batch.lines)
                break
            }
            batch.append(StructuredEntry(message: record.text(policy: policy), priority: record.priority,
                                         fields: record.journalFields(policy: policy)))
            if batch.size >= handOverSize, !sink.isPaused { sink.offer(&batch) }
            return
        }
        batch.lines.append(0x0A)
        batch.records += 1
        if batch.size >= handOverSize, !sink.isPaused { sink.offer(&batch) }
    }

    private func appendJSON(_ record: DecisionRecord, to buffer: inout [UInt8]) {
        var writer = JSONLineWriter(taking: &buffer)
        record.visit(policy: policy, &writer)
        buffer = writer.finish()
    }
}
