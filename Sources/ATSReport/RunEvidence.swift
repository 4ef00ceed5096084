import ATSPolicy
import TrafficLogs

/// What the run ledger says of the evidence (docs/decision-log-ledger.md). A run that has its
/// `run-start` (or a checkpoint) in the logs and no `run-stop`, and that no later run took over from
/// (a `run-start` naming it as `predecessor_run`: an upgrade), ended without saying so: SIGKILL, the
/// OOM killer, a failed node, or its log goes on in a file that was not read. Its last records, and
/// those of the connections open at its end, may be missing, so the verdict is incomplete, as with
/// `log-overflow` records. A run whose start is not in the logs (a rotated log) is only noted. Logs
/// without ledger records (older versions, HAR) are judged as before.
extension Report {
    /// The runs that ended without their `run-stop`, in the order read.
    public var incompleteRuns: [LoggedRun] {
        let continued = Set(summary.runs.compactMap { $0.predecessor?.run })
        return summary.runs.filter { $0.stop == nil && !continued.contains($0.id) && ($0.start != nil || $0.checkpoints > 0) }
    }

    /// Runs whose start is not in these logs, said once each (not a reason for exit status 2).
    public var runNotes: [String] {
        guard summary.hasLedger else { return [] }
        let incomplete = Set(incompleteRuns.map(\.id))
        return summary.runs.filter { $0.start == nil && !incomplete.contains($0.id) }
            .map { "run \($0.id): its start is not in these logs" }
    }

    /// A later run that took over from `run` (its `run-start` names it), if any.
    func successor(of run: LoggedRun) -> LoggedRun? {
        summary.runs.first { $0.predecessor?.run == run.id }
    }

    /// The JSON report's `runs`: each run and what the ledger says of it.
    var runsJSON: JSONValue {
        let incomplete = Set(incompleteRuns.map(\.id))
        return .array(summary.runs.map { run in
            var fields: [(String, JSONValue)] = [
                ("run", .string(run.id)),
                ("pid", run.pid.map(JSONValue.int) ?? .null),
                ("version", .optional(run.version)),
                ("complete", .bool(!incomplete.contains(run.id))),
                ("start", run.start.map { .string(Timestamp.text($0)) } ?? .null),
                ("predecessor_run", .optional(run.predecessor?.run)),
                ("continued_by", .optional(successor(of: run)?.id)),
                ("checkpoints", .int(run.checkpoints)),
                ("last_checkpoint", run.lastCheckpoint.map { checkpoint in
                    .object([("time", .string(Timestamp.text(checkpoint.time))), ("records", .int(checkpoint.records)),
                             ("dropped", .int(checkpoint.dropped)), ("open", .int(checkpoint.open))])
                } ?? .null),
                ("stop", run.stop.map { stop in
                    .object([("time", .string(Timestamp.text(stop.time))), ("stop", .string(stop.stop)),
                             ("records", .int(stop.records)), ("dropped", .int(stop.dropped)), ("open", .int(stop.open)),
                             ("successor_run", .optional(stop.successor?.run)),
                             ("handed_over", stop.handedOver.map(JSONValue.int) ?? .null)])
                } ?? .null),
                ("decisions", .int(run.decisions)),
                ("last_time", run.lastTime == .min ? .null : .string(Timestamp.text(run.lastTime))),
            ]
            if incomplete.contains(run.id) {
                fields.append(("open_at_last_checkpoint", run.lastCheckpoint.map { .int($0.open) } ?? .null))
                fields.append(("log_ends_after_s", .double(Double(run.silence) / 1000)))
                fields.append(("description", .string(run.incompleteDescription)))
            }
            return .object(fields)
        })
    }
}

extension LoggedRun {
    /// How long after its last checkpoint (or its start, without one) the run's log ends, in ms.
    public var silence: Int64 {
        let from = lastCheckpoint?.time ?? start ?? firstTime
        return lastTime == .min || from == .max ? 0 : max(0, lastTime - from)
    }

    /// `run 3f9c… (PID 812, atsgate 0.4.0, started …) ended without its run-stop …: 3 connections
    /// open at its last checkpoint (…); its log ends 4.2 s after that checkpoint`.
    public var incompleteDescription: String {
        var who: [String] = []
        if let pid { who.append("PID \(pid)") }
        if let version { who.append("atsgate \(version)") }
        who.append(start.map { "started \(Timestamp.text($0))" } ?? "its start is not in these logs")
        var text = "run \(id) (\(who.joined(separator: ", "))) ended without its run-stop "
            + "(killed, or its log goes on in a file not read)"
        if let checkpoint = lastCheckpoint {
            text += ": \(checkpoint.open) connection\(checkpoint.open == 1 ? "" : "s") open at its last checkpoint "
                + "(\(Timestamp.text(checkpoint.time))); its log ends \(Self.seconds(silence)) after that checkpoint"
        } else {
            let none = checkpointSeconds == 0 ? "no checkpoints (--log-checkpoint 0)" : "no checkpoint was written"
            text += ": \(none); its log ends \(Self.seconds(silence)) after its start"
        }
        return text
    }

    /// `4.2 s`.
    static func seconds(_ milliseconds: Int64) -> String {
        "\(milliseconds / 1000).\(milliseconds % 1000 / 100) s"
    }
}
