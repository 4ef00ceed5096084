import Glibc

/// A record of the run ledger (RunLedger.swift), written by the log's writer thread itself: field
/// `ledger` and no `action`, `reason` or `rule`, so it is no decision to any reader of decisions.
package struct LedgerRecord {
    package enum Event {
        case start(RunStart)
        /// `records`: decision records written in this run so far; `dropped`: lost so far.
        case checkpoint(records: Int, dropped: Int, RunStatus)
        case stop(records: Int, dropped: Int, RunStop)
    }

    package var time: Double
    package var version: String
    package var event: Event
    package var run = LogRun.id
    package var pid = getpid()

    package init(time: Double, version: String, event: Event) {
        self.time = time
        self.version = version
        self.event = event
    }

    /// `run-start`, `run-checkpoint` or `run-stop`.
    package var name: String {
        switch event {
        case .start: "run-start"
        case .checkpoint: "run-checkpoint"
        case .stop: "run-stop"
        }
    }

    /// The record in words (the journal's MESSAGE, the text line's end).
    package var message: String {
        switch event {
        case .start(let start):
            var text = "atsgate run \(run) started (\(version), PID \(pid))"
            if let predecessor = start.predecessor {
                text += ", taking over from run \(predecessor.run) (\(predecessor.version), PID \(predecessor.pid))"
            }
            return text + (start.checkpointSeconds > 0 ? "; a checkpoint every \(start.checkpointSeconds) s"
                                                       : "; no checkpoints (--log-checkpoint 0)")
        case .checkpoint(let records, let dropped, let status):
            return "atsgate run \(run): \(Self.count(records, "decision record")) written, \(dropped) lost, "
                + "\(Self.count(status.open, "connection")) open (configuration \(status.generation))"
        case .stop(let records, let dropped, let stop):
            var text = "atsgate run \(run) stopped (PID \(pid))"
            if let handOver = stop.handOver {
                text = "atsgate run \(run) handed over to run \(handOver.successor.run) (\(handOver.successor.version), "
                    + "PID \(handOver.successor.pid)) with \(Self.count(handOver.handedOver, "connection"))"
                if let tunnels = handOver.tunnels, let idle = handOver.idleClients {
                    text += " (\(Self.count(tunnels, "tunnel")), \(Self.count(idle, "idle client")))"
                }
                if let listeners = handOver.listeners { text += " and \(Self.count(listeners, "listener"))" }
            }
            return text + ": \(Self.count(records, "decision record")) written, \(dropped) lost, "
                + "\(Self.count(stop.cut, "connection")) cut at the stop"
        }
    }

    package func visit<Fields: LogFieldVisitor>(_ fields: inout Fields) {
        fields.time("time", time)
        fields.string("run", run)
        fields.string("ledger", name)
        fields.int("pid", Int(pid))
        fields.string("version", version)
        switch event {
        case .start(let start):
            fields.int("generation", start.generation)
            fields.int("checkpoint_s", start.checkpointSeconds)
            if let predecessor = start.predecessor {
                fields.string("predecessor_run", predecessor.run)
                fields.int("predecessor_pid", Int(predecessor.pid))
                fields.string("predecessor_version", predecessor.version)
            }
        case .checkpoint(let records, let dropped, let status):
            fields.int("records", records)
            fields.int("dropped", dropped)
            fields.int("open", status.open)
            fields.int("generation", status.generation)
        case .stop(let records, let dropped, let stop):
            fields.int("records", records)
            fields.int("dropped", dropped)
            fields.int("open", stop.cut)
            fields.string("stop", stop.handOver == nil ? "signal" : "upgrade")
            if let handOver = stop.handOver {
                fields.string("successor_run", handOver.successor.run)
                fields.int("successor_pid", Int(handOver.successor.pid))
                fields.string("successor_version", handOver.successor.version)
                fields.int("handed_over", handOver.handedOver)
            }
        }
        fields.string("message", message)
    }

    /// The record in the log's format, as a batch of its own (of no decision records).
    package func batch(format: LogFormat, structured: Bool) -> LogBatch {
        var batch = LogBatch()
        var object = JSONObjectFields()
        switch format {
        case .journal where structured:
            visit(&object)
            batch.entries.append(StructuredEntry(message: message, priority: 6, fields: object.journalFields))
            return batch
        case .text:
            // `TIME - LEDGER run-stop run=… pid=… …: message`, the overflow record's shape.
            visit(&object)
            var line: [UInt8] = []
            LogText.appendTimestamp(time, to: &line)
            line += " - LEDGER \(name)".utf8
            for (key, value) in object.fields where !["time", "ledger", "message"].contains(key) {
                if case .string(let text) = value { line += " \(key)=\(text)".utf8 } else { line += " \(key)=\(value.compact)".utf8 }
            }
            line += ": \(message)".utf8
            batch.lines = line
        case .json, .journal:
            var writer = JSONLineWriter(taking: &batch.lines)
            visit(&writer)
            batch.lines = writer.finish()
        }
        batch.lines.append(0x0A)
        return batch
    }

    private static func count(_ value: Int, _ noun: String) -> String {
        "\(value) \(noun)\(value == 1 ? "" : "s")"
    }
}
