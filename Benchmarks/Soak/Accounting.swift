import Foundation

/// The decision log held against the ledger: every request the soak sent must have its record
/// (found by the `SoakClient/ID` User-Agent it carried), once; a request that got no answer and
/// left no record is lost; and the log must hold exactly as many records as requests were sent.
struct Accounting {
    var records = 0
    /// The records the ledger calls for: at least (every head known to have arrived whole) and at
    /// most (plus those whose send failed part-way).
    var expectedAtLeast = 0
    var expectedAtMost = 0
    var lost: [Ledger.Entry] = []
    var answeredUnlogged: [Ledger.Entry] = []
    var duplicated: [(Ledger.Entry, Int)] = []
    /// Head timeouts logged without a User-Agent, against the slowloris clients that caused them.
    var headTimeouts = 0
    var slowloris = 0
    /// Records that name no request of the soak's.
    var strangers: [String] = []
    var unreadable = 0
    /// Per kind: sent, records called for, records found.
    var byKind: [Ledger.Kind: (sent: Int, expected: Int, logged: Int)] = [:]

    init(log path: String, ledger: Ledger) {
        let entries = ledger.all
        var found: [Int: Int] = [:]
        for line in readText(path).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                unreadable += 1
                continue
            }
            // The run ledger's own records (docs/decision-log-ledger.md) are no decisions.
            if object["ledger"] != nil { continue }
            records += 1
            let agent = object["user_agent"] as? String
            if let agent, agent.hasPrefix("SoakClient/"), let id = Int(agent.dropFirst("SoakClient/".count)),
               entries.indices.contains(id - 1) {
                found[id, default: 0] += 1
            } else if agent == nil, object["reason"] as? String == "request-timeout" {
                headTimeouts += 1
            } else if strangers.count < 10 {
                strangers.append(String(line.prefix(300)))
            } else {
                strangers.append("")
            }
        }
        for entry in entries {
            let logged = entry.identified ? found[entry.id] ?? 0 : 0
            var counts = byKind[entry.kind] ?? (0, 0, 0)
            counts.sent += 1
            counts.expected += entry.expectedRecords
            counts.logged += entry.identified ? logged : 0
            byKind[entry.kind] = counts
            expectedAtLeast += entry.uncertain ? 0 : entry.expectedRecords
            expectedAtMost += entry.uncertain ? 1 : entry.expectedRecords
            guard entry.identified else {
                if entry.kind == .slowloris { slowloris += entry.expectedRecords }
                continue
            }
            if logged > 1 || (logged == 1 && entry.expectedRecords == 0 && !entry.uncertain) {
                duplicated.append((entry, logged))
            } else if logged == 0, entry.expectedRecords == 1, !entry.uncertain {
                if entry.answered { answeredUnlogged.append(entry) } else { lost.append(entry) }
            }
        }
        if var counts = byKind[.slowloris] {
            counts.logged = headTimeouts
            byKind[.slowloris] = counts
        }
    }

    /// The count matches and nothing is lost, missing or doubled.
    var balanced: Bool {
        lost.isEmpty && answeredUnlogged.isEmpty && duplicated.isEmpty && strangers.isEmpty && unreadable == 0
            && headTimeouts == slowloris && (expectedAtLeast...expectedAtMost).contains(records)
    }

    func lines() -> [String] {
        let expected = expectedAtLeast == expectedAtMost ? "\(expectedAtLeast)" : "\(expectedAtLeast) to \(expectedAtMost)"
        var out = ["decision log: \(records) records for \(expected) expected (\(balanced ? "balanced" : "NOT BALANCED"))"]
        out.append("  | kind | sent | records expected | records found |")
        out.append("  | --- | --- | --- | --- |")
        for kind in Ledger.Kind.allCases {
            guard let counts = byKind[kind] else { continue }
            out.append("  | \(kind.rawValue) | \(counts.sent) | \(counts.expected) | \(counts.logged) |")
        }
        func show(_ title: String, _ entries: [Ledger.Entry]) {
            guard !entries.isEmpty else { return }
            out.append("  \(title): \(entries.count), e.g. " + entries.prefix(5).map {
                "#\($0.id) \($0.kind.rawValue) at \(Int($0.sentAt)) s (\($0.detail ?? "no detail"))"
            }.joined(separator: "; "))
        }
        show("LOST (neither answered nor logged)", lost)
        show("answered but not logged", answeredUnlogged)
        if !duplicated.isEmpty {
            out.append("  logged more than once: " + duplicated.prefix(5).map { "#\($0.0.id) \($0.0.kind.rawValue) \($0.1) times" }.joined(separator: "; "))
        }
        if headTimeouts != slowloris { out.append("  head timeouts logged: \(headTimeouts), slowloris clients: \(slowloris)") }
        if !strangers.isEmpty { out.append("  records of no request sent: \(strangers.count), e.g. \(strangers.first ?? "")") }
        if unreadable > 0 { out.append("  lines that are not JSON records: \(unreadable)") }
        return out
    }
}
