import Foundation

/// What the run found: the samples as a table, each judged series with its verdict, the decision
/// log's accounting, the daemon at rest, and PASS or FAIL with the reasons.
struct Verdict {
    let run: Run
    let samples: [Sample]
    let rest: Sample
    let trends: [Trend]
    let accounting: Accounting
    let reloads: [(time: Double, ok: Bool)]
    let bursts: [(time: Double, connected: Int, answered: Int)]
    let verdicts: (hits: Double, misses: Double)
    let exitStatus: Int32
    let daemonDied: Bool

    var failures: [String] {
        var out: [String] = []
        if daemonDied { out.append("the daemon exited during the run") }
        for trend in trends where trend.grows { out.append("\(trend.name) grows") }
        if !accounting.lost.isEmpty { out.append("\(accounting.lost.count) requests neither answered nor logged") }
        if !accounting.balanced { out.append("decision log: \(accounting.records) records for \(accounting.expectedAtLeast == accounting.expectedAtMost ? "\(accounting.expectedAtLeast)" : "\(accounting.expectedAtLeast)-\(accounting.expectedAtMost)") requests") }
        if rest.clientSockets > 0 { out.append("\(rest.clientSockets) client connections held at rest") }
        if rest.closeWait > 0 { out.append("\(rest.closeWait) sockets in CLOSE_WAIT at rest") }
        if reloads.contains(where: { !$0.ok }) { out.append("a SIGHUP was not followed by a reload") }
        if !daemonDied && exitStatus != 0 { out.append("the daemon exited \(exitStatus) on SIGTERM") }
        return out
    }

    var passed: Bool { failures.isEmpty }

    func text() -> String {
        var out = [""]
        let faults = run.faults.rotation.map(\.rawValue).joined(separator: ", ")
        out.append("atsgate soak: \(Int(run.duration)) s of load (\(run.ledger.all.count) requests and faults), a sample every \(Int(run.options.interval)) s; "
                   + "faults in turn: \(faults); descriptor bursts of \(run.options.burst) against ulimit -n \(run.options.descriptors); a SIGHUP a minute")
        for note in run.faults.skipped { out.append("skipped: \(note)") }
        out.append("")
        out.append("| time (s) | fds | RSS (MiB) | threads | CLOSE_WAIT | client sockets | requests | p50 (ms) | p99 (ms) | load errors | faults (not as expected) | events |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        var previous = -1.0
        for sample in samples {
            let events = reloads.filter { $0.time > previous && $0.time <= sample.time }.map { _ in "reload" }
                + bursts.filter { $0.time > previous && $0.time <= sample.time }.map { "burst (\($0.connected) connected)" }
            previous = sample.time
            func ms(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "-" }
            out.append("| \(Int(sample.time)) | \(sample.descriptors) | \(String(format: "%.1f", Double(sample.rssKiB) / 1024)) | \(sample.threads) | \(sample.closeWait) | \(sample.clientSockets) | \(sample.requests) | \(ms(sample.p50)) | \(ms(sample.p99)) | \(sample.errors) | \(sample.faults) (\(sample.faultErrors)) | \(events.joined(separator: ", ")) |")
        }
        out.append("| rest | \(rest.descriptors) | \(String(format: "%.1f", Double(rest.rssKiB) / 1024)) | \(rest.threads) | \(rest.closeWait) | \(rest.clientSockets) | | | | | | load stopped, settled |")
        out.append("")
        out.append("Growth over the second half (least-squares slope from \(Int(run.duration / 2)) s on, judged by slope - 2 standard errors against a floor):")
        for trend in trends { out.append("  \(trend.name): \(trend.verdict); floor: \(trend.why)") }
        out.append("")
        out += accounting.lines()
        let unexpected = run.ledger.all.filter { !$0.expected && $0.expectedRecords > 0 }
        if !unexpected.isEmpty {
            var byKind: [String: Int] = [:]
            for entry in unexpected { byKind[entry.kind.rawValue, default: 0] += 1 }
            out.append("not as expected (counted, not failed on unless they grow): " + byKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            for entry in unexpected.prefix(5) {
                out.append("  e.g. #\(entry.id) \(entry.kind.rawValue) at \(Int(entry.sentAt)) s: status \(entry.status.map(String.init) ?? "none"), \(entry.detail ?? "")")
            }
        }
        out.append("certificate verdicts during the run: \(Int(verdicts.hits)) cached, \(Int(verdicts.misses)) fresh")
        out.append("reloads: \(reloads.count) (\(reloads.filter(\.ok).count) seen in the daemon's stderr); bursts: "
                   + bursts.map { "\($0.connected) connected, \($0.answered) answered while held" }.joined(separator: "; "))
        out.append("at rest: \(rest.descriptors) descriptors against \(samples.first?.descriptors ?? 0) before the load (pooled origin connections may remain), \(rest.clientSockets) client sockets, \(rest.closeWait) in CLOSE_WAIT")
        out.append("")
        out.append(passed ? "PASS" : "FAIL: " + failures.joined(separator: "; "))
        return out.joined(separator: "\n") + "\n"
    }
}
