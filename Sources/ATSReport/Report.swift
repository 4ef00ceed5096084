import ATSPolicy
import Foundation

/// A policy file given to `atsgate report`, with the app ID it stands for when one was given (`ID=FILE`).
public struct ReportPolicy: Sendable {
    public var id: String?
    public var source: PolicySource
    /// The file's text (XML or JSON), to locate keys for SARIF; nil for binary plists.
    public var text: String?

    public init(id: String?, source: PolicySource, text: String?) {
        self.id = id
        self.source = source
        self.text = text
    }

    /// Reads `[ID=]FILE`; the error is one line naming the file.
    public static func load(_ argument: String) throws(PolicyLoadError) -> ReportPolicy {
        var id: String?
        var path = argument
        if let equals = argument.firstIndex(of: "="), !FileManager.default.fileExists(atPath: argument) {
            id = String(argument[..<equals])
            path = String(argument[argument.index(after: equals)...])
        }
        let data = try PolicyLoader.read(path: path)
        let source = try PolicyLoader.parse(data: data, origin: path)
        let text = source.format == .binaryPlist ? nil : String(data: data, encoding: .utf8)
        return ReportPolicy(id: id, source: source, text: text)
    }

    /// Whether records logged for `app` (an app ID, or the policy path the proxy logged) are this policy's.
    func matches(_ app: String) -> Bool {
        if let id { return id == app }
        let path = source.origin
        let name = (path as NSString).lastPathComponent
        return app == path || (app as NSString).lastPathComponent == name
            || app == (name as NSString).deletingPathExtension
    }
}

/// One destination's lines in the report.
public struct DestinationReport: Sendable {
    public var traffic: DestinationTraffic
    /// The decision under the app's policy (nil when the logged host is not one the engine can decide).
    public var decision: Decision?
    /// Why it would be blocked under the app's policy; empty when it would not be.
    public var findings: [Finding]
    public var fix: DestinationFix?

    public var isBlocked: Bool { !findings.isEmpty }
}

/// The verdict for one app: its destinations, fixes, unused keys and the suggested dictionary.
public struct AppReport: Sendable {
    public var app: String
    public var policy: PolicySource
    public var policyText: String?
    /// Set when the policy was not given for this app and a default stood in.
    public var policyNote: String?
    public var destinations: [DestinationReport]
    public var unused: [UnusedKey]
    public var changes: [PolicyChange]
    public var suggestion: SuggestedPolicy
    /// Records of the proxy's own answers that name no destination, by reason.
    public var undirected: [String: Int]

    public var blocked: [DestinationReport] { destinations.filter(\.isBlocked) }
    public var records: Int { destinations.reduce(0) { $0 + $1.traffic.records } + undirected.values.reduce(0, +) }

    /// Records per reason code, over every destination (for the chart by reason).
    public var reasons: [(String, Int)] {
        var counts: [String: Int] = [:]
        for destination in destinations { for (reason, count) in destination.traffic.reasons { counts[reason, default: 0] += count } }
        for (reason, count) in undirected { counts[reason, default: 0] += count }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

    public func count(_ action: LoggedAction) -> Int { destinations.reduce(0) { $0 + $1.traffic.count(action) } }
}

/// `atsgate report`'s whole result: what was read, and each app's verdict.
public struct Report: Sendable {
    public var summary: TrafficSummary
    public var apps: [AppReport]
    public var options: EngineOptions

    /// Something was, or would be, blocked.
    public var wouldBlock: Bool { apps.contains { !$0.blocked.isEmpty } }
    public var isProven: Bool { apps.allSatisfy(\.suggestion.isProven) }

    /// Judges `summary` app by app under the matching policies.
    public init(summary: TrafficSummary, policies: [ReportPolicy], options: EngineOptions) {
        self.summary = summary
        self.options = options
        var apps: [AppReport] = []
        let names = Set(summary.destinations.map(\.app)).union(summary.undirected.keys).sorted()
        for app in names {
            var note: String?
            let policy: ReportPolicy
            if let match = policies.first(where: { $0.matches(app) }) {
                policy = match
            } else if policies.count == 1, policies[0].id == nil {
                policy = policies[0]
            } else if policies.isEmpty, app == "embedded" || app == PolicySource.empty.origin {
                // The proxy ran on its embedded default, the empty dictionary: so is the report.
                policy = ReportPolicy(id: app, source: .empty, text: nil)
            } else if policies.isEmpty, app != "-", let loaded = try? ReportPolicy.load(app) {
                policy = loaded
                note = "no --policy given: the policy file the proxy logged, read from \(app)"
            } else {
                policy = ReportPolicy(id: app, source: .empty, text: nil)
                note = policies.isEmpty
                    ? "no --policy given and '\(app)' is not a readable policy file: judged under the empty dictionary (full ATS)"
                    : "no --policy matches app '\(app)': judged under the empty dictionary (full ATS)"
            }
            let traffic = summary.destinations.filter { $0.app == app }
            apps.append(Report.judge(app: app, policy: policy, note: note, traffic: traffic,
                                     undirected: summary.undirected[app] ?? [:], options: options))
        }
        self.apps = apps
    }

    static func judge(app: String, policy: ReportPolicy, note: String?, traffic: [DestinationTraffic],
                      undirected: [String: Int], options: EngineOptions) -> AppReport {
        let source = policy.source
        let judge = DestinationJudge(policy: Policy(source), options: options)
        let findings = traffic.map(judge.findings)
        let planner = FixPlanner(source: source, options: options, traffic: traffic, findings: findings, judge: judge)
        let (fixes, changes) = planner.plan()
        let unused = UnusedKeyFinder(source: source, options: options, traffic: traffic, judge: judge).find()
        let suggestion = SuggestedPolicy.make(source: source, options: options, traffic: traffic, findings: findings,
                                              added: changes, unused: unused)
        let destinations = traffic.indices.map {
            DestinationReport(traffic: traffic[$0], decision: judge.decide(traffic[$0]), findings: findings[$0],
                              fix: fixes[$0])
        }
        return AppReport(app: app, policy: source, policyText: policy.text, policyNote: note, destinations: destinations,
                         unused: unused, changes: changes, suggestion: suggestion, undirected: undirected)
    }
}
