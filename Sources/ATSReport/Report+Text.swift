import ATSLint
import ATSPolicy

extension Report {
    /// What a person reads in a CI log: the counts, then what would break with its fix, then unused keys.
    public var text: String {
        var out = ""
        let inputs = summary.inputs
        out += "atsgate report: \(summary.records) records from \(inputs.count) log\(inputs.count == 1 ? "" : "s")"
        out += ", profile \(options.profile.rawValue)\n"
        for input in inputs where input.notRecords + input.missingFields > 0 {
            out += "  \(input.path): \(input.notRecords + input.missingFields) of \(input.lines) lines skipped"
            if let first = input.firstSkipped { out += " (line \(first.line): \(first.why))" }
            out += "\n"
        }
        for app in apps { out += "\n" + app.text }
        let blocked = apps.reduce(0) { $0 + $1.blocked.count }
        out += "\n"
        out += blocked == 0
            ? "verdict: nothing was or would be blocked\n"
            : "verdict: \(blocked) destination\(blocked == 1 ? "" : "s") \(blocked == 1 ? "was or would be" : "were or would be") blocked\n"
        return out
    }
}

extension AppReport {
    var text: String {
        var out = app == policy.origin ? "policy \(app)\n" : "app \(app) (policy \(policy.origin))\n"
        if let policyNote { out += "  note: \(policyNote)\n" }
        let counts = LoggedAction.allCases.compactMap { action -> String? in
            let count = self.count(action)
            return count == 0 ? nil : "\(count) \(action.name)"
        }
        out += "  \(destinations.count) destinations, \(records) records: \(counts.joined(separator: ", "))\n"
        if !undirected.isEmpty {
            let parts = undirected.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            out += "  without a destination: \(parts.joined(separator: ", "))\n"
        }
        let blocked = self.blocked
        if blocked.isEmpty {
            out += "  nothing was or would be blocked\n"
        } else {
            out += "  WOULD BREAK (\(blocked.count)):\n"
            for destination in blocked { out += destination.text }
        }
        if !unused.isEmpty {
            out += "  UNUSED (\(unused.count), candidates to remove):\n"
            for key in unused {
                out += "    \(LintKeyPath(key.change.keyPath.map(LintKeyPath.Component.key)).description): \(key.note)\n"
            }
        }
        if suggestion.isProven {
            out += "  suggested dictionary (--format plist): \(suggestion.added.count) change(s) added, "
                + "\(suggestion.removed.count) unused key(s) removed; proven against all \(destinations.count) destinations\n"
        } else {
            out += "  suggested dictionary (--format plist): NOT proven; still blocked under it: "
                + suggestion.unproven.map { "\($0.url) (\($0.reasons.joined(separator: ", ")))" }.joined(separator: "; ") + "\n"
        }
        return out
    }
}

extension DestinationReport {
    var text: String {
        let reasons = findings.map(\.reason).joined(separator: ", ")
        var out = "    \(traffic.url)  \(reasons)  \(traffic.records) record\(traffic.records == 1 ? "" : "s"), "
        out += traffic.firstTime == traffic.lastTime ? "at \(Timestamp.text(traffic.firstTime))"
            : "\(Timestamp.text(traffic.firstTime)) .. \(Timestamp.text(traffic.lastTime))"
        if traffic.reportOnlyBlocks > 0 { out += ", \(traffic.reportOnlyBlocks) report-only" }
        out += "\n"
        for finding in findings { out += "      \(finding.reason): \(finding.detail)\n" }
        if let fix {
            if !fix.changes.isEmpty {
                out += "      fix: " + fix.changes.map(\.summary).joined(separator: ", ")
                out += fix.needsJustification ? " [App Review asks for a justification]" : " [no App Review justification needed]"
                out += fix.verified ? " (verified by deciding again)" : " (NOT verified: still blocked with it)"
                out += "\n"
                if let scope = fix.scope { out += "        \(scope)\n" }
            }
            for item in fix.unfixable { out += "      no key: \(item.advice)\n" }
        }
        return out
    }
}
