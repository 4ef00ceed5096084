/// The record that says decision records were lost (INTERFACE.md, "The decision log under
/// pressure"): action `error`, reason `log-overflow`, and `dropped`, how many since the last such
/// record. It is written by the log's writer as soon as the log accepts writes again, so the records
/// read plus the `dropped` counts add up to the decisions made. It is not a decision itself.
package struct LogOverflowRecord {
    package var time: Double
    package var dropped: Int
    /// Lost since the start (the metric's value then): the last record of a stopping daemon says it
    /// even when earlier records counted them all.
    package var droppedTotal: Int
    /// Why they were lost (a full buffer, a failed write).
    package var cause: String

    package var message: String {
        guard dropped > 0 else {
            return "\(droppedTotal) decision record\(droppedTotal == 1 ? " was" : "s were") lost since the start, "
                + "each counted by an earlier log-overflow record"
        }
        return "\(dropped) decision record\(dropped == 1 ? " was" : "s were") not written: \(cause)"
    }

    package func visit<Fields: LogFieldVisitor>(_ fields: inout Fields) {
        fields.time("time", time)
        fields.string("run", LogRun.id)
        fields.string("action", "error")
        fields.string("reason", Reason.logOverflow.rawValue)
        fields.string("message", message)
        fields.int("dropped", dropped)
        fields.int("dropped_total", droppedTotal)
    }

    /// The record in the log's format, as a batch of its own (of no decision records).
    package func batch(format: LogFormat, structured: Bool) -> LogBatch {
        var batch = LogBatch()
        switch format {
        case .journal where structured:
            var object = JSONObjectFields()
            visit(&object)
            // A warning (syslog 4): something an operator must know, not a failure of the proxy.
            batch.entries.append(StructuredEntry(message: message, priority: 4, fields: object.journalFields))
        case .text:
            var line: [UInt8] = []
            LogText.appendTimestamp(time, to: &line)
            line += " - ERROR \(Reason.logOverflow.rawValue) dropped=\(dropped) run=\(LogRun.id): \(message)".utf8
            batch.lines = line
        case .json, .journal:
            var writer = JSONLineWriter(taking: &batch.lines)
            visit(&writer)
            batch.lines = writer.finish()
        }
        if batch.entries.isEmpty { batch.lines.append(0x0A) }
        return batch
    }
}
