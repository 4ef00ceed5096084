import ATSLint
import ATSPolicy
import TrafficLogs

extension Report {
    /// What a person reads in a CI log: the counts, then what would break with its fix, then unused keys.
    public var text: String {
        var out = ""
        let inputs = summary.inputs
        out += "atsgate report: \(counted(summary.records, "record")) from \(inputsDescription), profile \(options.profile.rawValue)\n"
        for input in inputs {
            if let creator = input.creator { out += "  \(input.path): HAR written by \(creator), \(input.lines) entries\n" }
            if let skipped = input.skippedDescription { out += "  \(skipped)\n" }
        }
        for line in incompleteDescriptions { out += "  INCOMPLETE: \(line)\n" }
        for note in runNotes { out += "  note: \(note)\n" }
        if let baseline = settings.baseline {
            let counts = baselineCounts
            out += "  baseline \(baseline.path): \(counts.new) new, \(counts.unchanged) unchanged, \(counts.absent) absent\n"
        }
        for app in apps { out += "\n" + app.text(self) }
        if !system.isEmpty {
            let records = system.reduce(0) { $0 + $1.records }
            let bytes = system.reduce(0) { $0 + $1.bytesUp + $1.bytesDown }
            out += "\nSYSTEM: the device's own traffic, not an app's (\(system.count) destination\(system.count == 1 ? "" : "s"),"
                + " \(records) record\(records == 1 ? "" : "s"), \(Report.byteCount(bytes)); ATS does not judge it, so it"
                + " needs no key in any app's dictionary):\n"
            for traffic in system {
                let reasons = traffic.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                out += "    \(traffic.url): \(traffic.records) record\(traffic.records == 1 ? "" : "s"),"
                    + " \(Report.byteCount(traffic.bytesUp)) up, \(Report.byteCount(traffic.bytesDown)) down"
                    + (reasons.isEmpty ? "" : " (\(reasons))") + "\n"
            }
        }
        if !absentElsewhere.isEmpty {
            out += "\nABSENT since the baseline, apps not recorded in this run (\(absentElsewhere.count)):\n"
            for finding in absentElsewhere { out += "    \(finding.app): \(finding.summary)\n" }
        }
        out += "\nverdict: \(verdict)\n"
        return out
    }

    /// `2 logs and 1 HAR capture`.
    var inputsDescription: String {
        let logs = summary.inputs.filter { $0.kind == .log }.count, hars = summary.inputs.count - logs
        var parts: [String] = []
        if logs > 0 || hars == 0 { parts.append("\(logs) log\(logs == 1 ? "" : "s")") }
        if hars > 0 { parts.append("\(hars) HAR capture\(hars == 1 ? "" : "s")") }
        return parts.joined(separator: " and ")
    }

    /// The last line: what was blocked, what of it is new, and whether the evidence is complete.
    public var verdict: String {
        let blocked = apps.reduce(0) { $0 + $1.blocked.count }
        var text = blocked == 0 ? "nothing was or would be blocked"
            : "\(blocked) destination\(blocked == 1 ? "" : "s") \(blocked == 1 ? "was or would be" : "were or would be") blocked"
        if settings.baseline != nil {
            let new = apps.reduce(0) { $0 + $1.destinations.filter(\.isNewlyBlocked).count }
            text += " (\(new) new since the baseline)"
        }
        if settings.requireQuantumSecure {
            let classical = apps.reduce(0) { $0 + $1.quantum(.classical).count }
            text += "; \(classical) not quantum-secure (required)"
        }
        if isIncomplete {
            var parts: [String] = []
            if !incompleteInputs.isEmpty {
                parts.append("\(missingDecisions) decision\(missingDecisions == 1 ? "" : "s") missing from the logs")
            }
            let runs = incompleteRuns.count
            if runs > 0 { parts.append("\(runs) run\(runs == 1 ? "" : "s") ended without a run-stop") }
            text += "; INCOMPLETE: " + parts.joined(separator: "; ")
        }
        return text
    }
}

extension InputStats {
    /// `cap.har: 2 of 6 entries skipped (entry 4: no request.url; in all: 1 no request.url, 1 not an http(s) load (data:))`.
    public var skippedDescription: String? {
        let count = notRecords + missingFields
        guard count > 0 else { return nil }
        var text = "\(path): \(count) of \(lines) \(units) skipped"
        let named = skipped.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        if let first = firstSkipped {
            text += " (\(unit) \(first.line): \(first.why)"
            if named.count > 1 { text += "; in all: " + named.map { "\($0.value) \($0.key)" }.joined(separator: ", ") }
            text += ")"
        }
        return text
    }

    /// `decisions.log: 1234 decisions missing (3 log-overflow records)`.
    public var incompleteDescription: String {
        "\(path): \(dropped) decision\(dropped == 1 ? "" : "s") missing (\(overflowRecords) log-overflow record"
            + "\(overflowRecords == 1 ? "" : "s"): the proxy made them but could not write them)"
    }
}

extension AppReport {
    func text(_ report: Report) -> String {
        var out = app == policy.origin ? "policy \(app)\n" : "app \(app) (policy \(policy.origin))\n"
        if let policyNote { out += "  note: \(policyNote)\n" }
        let counts = LoggedAction.allCases.compactMap { action -> String? in
            let count = self.count(action)
            return count == 0 ? nil : "\(count) \(action.name)"
        }
        out += "  \(counted(destinations.count, "destination")), \(counted(records, "record")): \(counts.joined(separator: ", "))\n"
        if !undirected.isEmpty {
            let parts = undirected.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            out += "  without a destination: \(parts.joined(separator: ", "))\n"
        }
        let devices = self.devices
        if !devices.isEmpty {
            out += "  devices: " + devices.map { "\($0.0) (\($0.1) record\($0.1 == 1 ? "" : "s"))" }.joined(separator: ", ") + "\n"
        }
        let blocked = self.blocked
        if blocked.isEmpty {
            out += "  nothing was or would be blocked\n"
        } else if report.settings.baseline == nil {
            out += "  WOULD BREAK (\(blocked.count)):\n"
            for destination in blocked { out += destination.text }
        } else {
            for state in [BaselineState.new, .unchanged] {
                let group = blocked.filter { $0.baseline == state }
                guard !group.isEmpty else { continue }
                out += "  WOULD BREAK, \(state.rawValue.uppercased()) since the baseline (\(group.count)):\n"
                for destination in group { out += destination.text }
            }
        }
        if !absent.isEmpty {
            out += "  ABSENT since the baseline (\(absent.count)):\n"
            for finding in absent { out += "    \(finding.summary)\n" }
        }
        let refused = refusedByApp
        if !refused.isEmpty {
            out += "  THE APP REFUSED THIS SERVER (\(refused.count)): its pinning or the device's trust evaluation ended "
                + "the handshake (alert; encrypted: TLS 1.3):\n"
            for destination in refused {
                let traffic = destination.traffic
                out += "    \(traffic.url)  \(traffic.clientRefusalSummary)"
                if !traffic.devices.isEmpty { out += "  devices: \(traffic.deviceNames.joined(separator: ", "))" }
                out += "\n"
            }
        }
        for outside in outsideSystemProxy {
            out += "  device \(outside.device): \(outside.summary) (\(OutsideSystemProxy.meaning)): "
                + outside.destinations.joined(separator: ", ") + "\n"
        }
        let notChecked = self.notChecked
        if !notChecked.isEmpty {
            out += "  NOT CHECKED (\(notChecked.count)):\n"
            for destination in notChecked { out += "    \(destination.traffic.url)  \(destination.notChecked!)\n" }
        }
        if !unused.isEmpty {
            out += "  UNUSED (\(unused.count), candidates to remove):\n"
            for (index, key) in unused.enumerated() {
                let state = index < unusedBaseline.count ? " [\(unusedBaseline[index].rawValue)]" : ""
                out += "    \(LintKeyPath(key.change.keyPath.map(LintKeyPath.Component.key)).description): \(key.note)\(state)\n"
            }
        }
        out += quantumText(report)
        if suggestion.isProven {
            out += "  suggested dictionary (--format plist): \(suggestion.added.count) change(s) added, "
                + "\(suggestion.removed.count) unused key(s) removed; proven against \(destinations.count == 1 ? "its" : "all") \(counted(destinations.count, "destination"))\n"
        } else {
            out += "  suggested dictionary (--format plist): NOT proven; still blocked under it: "
                + suggestion.unproven.map { "\($0.url) (\($0.reasons.joined(separator: ", ")))" }.joined(separator: "; ") + "\n"
        }
        return out
    }

    /// The quantum-secure section: counts, then each server that answered an offer with a classical group.
    func quantumText(_ report: Report) -> String {
        let tls = destinations.filter { $0.quantum != nil }
        guard !tls.isEmpty else { return "" }
        guard recordsKeyExchange else {
            return "  quantum-secure: not recorded (no record has key_exchange: a proxy before it, or a capture without it)\n"
        }
        let classical = quantum(.classical)
        var out = "  quantum-secure (\(counted(tls.count, "TLS destination"))): \(quantum(.postQuantum).count) post-quantum, "
            + "\(classical.count) answered a post-quantum offer with a classical group, "
            + "\(quantum(.unknown).count) never seen with an offer (unknown)\n"
        for destination in classical {
            let state = destination.quantumBaseline.map { " [\($0.rawValue)]" } ?? ""
            let label = report.settings.requireQuantumSecure ? "NOT QUANTUM-SECURE (required)" : "not quantum-secure"
            out += "    \(label): \(destination.traffic.url) chose "
                + destination.traffic.keyExchangeGroups.joined(separator: ", ") + "\(state)\n"
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
        if !traffic.devices.isEmpty { out += ", devices: \(traffic.deviceNames.joined(separator: ", "))" }
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
            if let alternative = fix.alternative {
                out += "      alternative (--consolidate): " + alternative.changes.map(\.summary).joined(separator: ", ")
                    + "; \(alternative.summary); \(alternative.opens)\n"
            }
            for item in fix.unfixable { out += "      no key: \(item.advice)\n" }
        }
        return out
    }
}

extension Report {
    /// `812 B`, `4.1 kB`, `12.0 MB`: decimal units, one decimal past a kilobyte.
    static func byteCount(_ bytes: Int) -> String {
        guard bytes >= 1000 else { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }
}
