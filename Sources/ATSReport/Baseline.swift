import Foundation
import TrafficLogs

/// A finding's state against `--baseline`, in SARIF's words (`baselineState`).
public enum BaselineState: String, Sendable {
    /// Not in the baseline: the only kind that fails the gate.
    case new
    /// In the baseline already: accepted when the baseline was.
    case unchanged
    /// In the baseline, gone from this run.
    case absent
}

/// A finding of the baseline that this run does not have.
public struct AbsentFinding: Sendable, Equatable {
    /// `would-block`, `unused-key` or `not-quantum-secure` (the SARIF rule).
    public var rule: String
    public var app: String
    /// The destination's URL, or the unused key's path.
    public var subject: String
    /// The block reasons that went (would-block only).
    public var reasons: [String]

    public init(rule: String, app: String, subject: String, reasons: [String]) {
        self.rule = rule
        self.app = app
        self.subject = subject
        self.reasons = reasons
    }

    /// One line: `http://api.example.com:80 is no longer blocked (cleartext-http)`.
    public var summary: String {
        switch rule {
        case Baseline.wouldBlock: "\(subject) is no longer blocked for " + reasons.joined(separator: ", ")
        case Baseline.unusedKey: "\(subject) is no longer an unused key"
        default: "\(subject) no longer answers a post-quantum offer with a classical group"
        }
    }
}

/// An earlier `atsgate report --format json` document: what its gate had accepted.
///
/// Findings are identified by what a person would call the same finding: a block by app, URL and
/// reason (a destination blocked for a new reason is new); an unused key by app and key path; a
/// classical answer to a post-quantum offer by app and URL. Counts and times may differ freely.
public struct Baseline: Sendable {
    static let wouldBlock = "would-block", unusedKey = "unused-key", notQuantumSecure = "not-quantum-secure"

    public var path: String
    /// Findings as (rule, app, subject, reason) with reason "" when the rule has none.
    var findings: Set<Key> = []

    struct Key: Hashable, Sendable {
        var rule: String
        var app: String
        var subject: String
        var reason: String
    }

    /// Why a file is not a baseline: one line naming it.
    public struct LoadError: Error, CustomStringConvertible, Sendable {
        public var path: String
        public var problem: String
        public var description: String { "\(path): \(problem)" }
    }

    init(path: String, findings: Set<Key> = []) {
        self.path = path
        self.findings = findings
    }

    /// Reads a baseline; a file that is not an `atsgate report --format json` document is refused.
    public static func load(_ path: String) throws(LoadError) -> Baseline {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LoadError(path: path, problem: "cannot read the baseline")
        }
        let notOurs = "not an atsgate report --format json document"
        guard let document = try? JSONSerialization.jsonObject(with: data) else {
            throw LoadError(path: path, problem: "\(notOurs) (not JSON)")
        }
        guard let root = document as? [String: Any], let apps = root["apps"] as? [[String: Any]],
              root["inputs"] is [Any], root["would_block"] is Bool, root["profile"] is String else {
            throw LoadError(path: path, problem: "\(notOurs) (it needs \"apps\", \"inputs\", \"would_block\" and \"profile\")")
        }
        var baseline = Baseline(path: path)
        for app in apps {
            guard let name = app["app"] as? String, let destinations = app["destinations"] as? [[String: Any]] else {
                throw LoadError(path: path, problem: "\(notOurs) (an app without \"app\" or \"destinations\")")
            }
            for destination in destinations where destination["blocked"] as? Bool == true {
                guard let url = destination["url"] as? String, let findings = destination["findings"] as? [[String: Any]] else {
                    throw LoadError(path: path, problem: "\(notOurs) (a blocked destination without \"url\" or \"findings\")")
                }
                for finding in findings {
                    guard let reason = finding["reason"] as? String else { continue }
                    baseline.findings.insert(Key(rule: wouldBlock, app: name, subject: url, reason: reason))
                }
            }
            for unused in app["unused"] as? [[String: Any]] ?? [] {
                guard let path = unused["key_path"] as? [String] else { continue }
                baseline.findings.insert(Key(rule: unusedKey, app: name, subject: path.joined(separator: "."), reason: ""))
            }
            let quantum = app["quantum_secure"] as? [String: Any]
            for classical in quantum?["classical"] as? [[String: Any]] ?? [] {
                guard let url = classical["url"] as? String else { continue }
                baseline.findings.insert(Key(rule: notQuantumSecure, app: name, subject: url, reason: ""))
            }
        }
        return baseline
    }
}

extension Report {
    /// Marks every finding new or unchanged against `baseline`, and lists the baseline's findings this
    /// run no longer has.
    mutating func compare(with baseline: Baseline) {
        var current: Set<Baseline.Key> = []
        for index in apps.indices {
            let app = apps[index].app
            for position in apps[index].destinations.indices {
                let destination = apps[index].destinations[position]
                if destination.isBlocked {
                    let keys = destination.findings.map {
                        Baseline.Key(rule: Baseline.wouldBlock, app: app, subject: destination.traffic.url, reason: $0.reason)
                    }
                    current.formUnion(keys)
                    apps[index].destinations[position].baseline = keys.allSatisfy(baseline.findings.contains) ? .unchanged : .new
                }
                if destination.quantum == .classical {
                    let key = Baseline.Key(rule: Baseline.notQuantumSecure, app: app, subject: destination.traffic.url, reason: "")
                    current.insert(key)
                    apps[index].destinations[position].quantumBaseline = baseline.findings.contains(key) ? .unchanged : .new
                }
            }
            apps[index].unusedBaseline = apps[index].unused.map { unused in
                let key = Baseline.Key(rule: Baseline.unusedKey, app: app, subject: unused.change.keyPath.joined(separator: "."),
                                       reason: "")
                current.insert(key)
                return baseline.findings.contains(key) ? .unchanged : .new
            }
        }
        // What went: grouped back into one finding per rule, app and subject.
        var absent: [String: AbsentFinding] = [:]
        for key in baseline.findings.subtracting(current) {
            let id = "\(key.rule)\u{0}\(key.app)\u{0}\(key.subject)"
            var finding = absent[id] ?? AbsentFinding(rule: key.rule, app: key.app, subject: key.subject, reasons: [])
            if !key.reason.isEmpty { finding.reasons.append(key.reason) }
            absent[id] = finding
        }
        let sorted = absent.values.map { finding -> AbsentFinding in
            var finding = finding
            finding.reasons.sort()
            return finding
        }.sorted { ($0.app, $0.rule, $0.subject) < ($1.app, $1.rule, $1.subject) }
        for index in apps.indices { apps[index].absent = sorted.filter { $0.app == apps[index].app } }
        absentElsewhere = sorted.filter { finding in !apps.contains { $0.app == finding.app } }
    }

    /// The baseline's counts: findings new, unchanged and absent (blocks, unused keys and classical answers).
    public var baselineCounts: (new: Int, unchanged: Int, absent: Int) {
        var counts = (new: 0, unchanged: 0, absent: absentElsewhere.count)
        for app in apps {
            let states = app.destinations.compactMap(\.baseline) + app.destinations.compactMap(\.quantumBaseline) + app.unusedBaseline
            counts.new += states.filter { $0 == .new }.count
            counts.unchanged += states.filter { $0 == .unchanged }.count
            counts.absent += app.absent.count
        }
        return counts
    }
}
