import ATSPolicy
import Foundation
@_exported import TrafficLogs

/// A policy file given to `atsgate report`, with the app ID it stands for when one was given (`ID=FILE`).
public struct ReportPolicy: Sendable {
    public var id: String?
    public var source: PolicySource
    /// The file's text (XML or JSON), to locate keys for SARIF; nil for binary plists.
    public var text: String?
    /// The app the policy is, as the proxy's records name it: the ID given, else the file's
    /// CFBundleIdentifier, else its name. A capture without `ID=` counts under it when it is the only
    /// policy given, so that the same app's captures (run1.har, run2.har) are one app, and a baseline
    /// of one matches the other.
    public var appID: String

    public init(id: String?, source: PolicySource, text: String?, appID: String? = nil) {
        self.id = id
        self.source = source
        self.text = text
        self.appID = appID ?? id ?? (source.origin as NSString).lastPathComponent
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
        return ReportPolicy(id: id, source: source, text: text, appID: PolicyLoader.appID(given: id, data: data, path: path))
    }

    /// Whether records logged for `app` (an app ID, or the policy path the proxy logged) are this policy's.
    func matches(_ app: String) -> Bool {
        if let id { return id == app }
        if app == appID { return true }
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
    /// Against `--baseline`: whether this destination's findings are new or were all there before.
    public var baseline: BaselineState?
    /// Against `--baseline`: the state of its quantum-secure finding (a classical answer).
    public var quantumBaseline: BaselineState?

    public var isBlocked: Bool { !findings.isEmpty }
    /// Blocked, and not already in the baseline: what fails the gate.
    public var isNewlyBlocked: Bool { isBlocked && baseline != .unchanged }
    public var quantum: QuantumStatus? { traffic.quantum }

    /// Why an HTTPS destination's handshake rules could not be judged, when they could not: no
    /// handshake recorded at all, or (a HAR without the cipher) only the version. Never a silent pass.
    /// A destination every record of which was refused before any TLS (a port off --connect-port, a
    /// name that did not resolve) had no handshake to check: it is not listed here.
    public var notChecked: String? {
        guard traffic.scheme == Scheme.https.rawValue else { return nil }
        let wentThrough = traffic.count(.allow) + traffic.count(.captured) + traffic.reportOnlyBlocks
        guard wentThrough > 0 || !traffic.handshakes.isEmpty else { return nil }
        let source = traffic.count(.captured) == traffic.records ? "capture" : traffic.count(.captured) > 0 ? "capture or the log" : "log"
        if traffic.handshakes.isEmpty { return "no handshake in the \(source)" }
        if traffic.count(.captured) > 0, traffic.handshakes.allSatisfy({ $0.cipher == nil }) {
            return "TLS version only: the \(source) has no cipher suite, so forward secrecy is not checked"
        }
        return nil
    }
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
    /// Unused keys' states against `--baseline`, by position in `unused`.
    public var unusedBaseline: [BaselineState] = []
    /// Findings of the baseline that this run no longer has.
    public var absent: [AbsentFinding] = []
    /// Per device that also used the proxy: the app's connections that came in on the transparent path,
    /// around the system proxy (an app or API that ignores it, which ATS does not protect).
    public var outsideSystemProxy: [OutsideSystemProxy] = []

    public var blocked: [DestinationReport] { destinations.filter(\.isBlocked) }
    /// Destinations whose server the app itself refused (`client-refused-certificate`): its pinning
    /// or the device's trust evaluation ended the handshake after the server's certificate.
    public var refusedByApp: [DestinationReport] { destinations.filter { !$0.traffic.clientRefusals.isEmpty } }
    /// Records per device over every destination (`--device`), the busiest first.
    public var devices: [(String, Int)] {
        var counts: [String: Int] = [:]
        for destination in destinations { counts.merge(destination.traffic.devices, uniquingKeysWith: +) }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }
    public var notChecked: [DestinationReport] { destinations.filter { $0.notChecked != nil } }
    /// TLS destinations by quantum-secure status.
    public func quantum(_ status: QuantumStatus) -> [DestinationReport] { destinations.filter { $0.quantum == status } }
    /// Any record of the app says which group its server chose.
    public var recordsKeyExchange: Bool { destinations.contains { !$0.traffic.keyExchanges.isEmpty } }
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

/// How the verdict is reached beyond the policy: the flags of `atsgate report` that change it.
public struct ReportSettings: Sendable {
    /// `--consolidate`: the suggested dictionary uses parent entries where they apply.
    public var consolidate = false
    /// `--require-quantum-secure`: a server that answers a post-quantum offer with a classical group fails.
    public var requireQuantumSecure = false
    /// `--baseline`: only findings it does not have count.
    public var baseline: Baseline?
    /// `--allow-incomplete`: logs that lost decisions, or whose runs ended without their run-stop,
    /// are judged anyway (still shown, never an error).
    public var allowIncomplete = false

    public init(consolidate: Bool = false, requireQuantumSecure: Bool = false, baseline: Baseline? = nil,
                allowIncomplete: Bool = false) {
        self.consolidate = consolidate
        self.requireQuantumSecure = requireQuantumSecure
        self.baseline = baseline
        self.allowIncomplete = allowIncomplete
    }
}

/// `atsgate report`'s whole result: what was read, and each app's verdict.
public struct Report: Sendable {
    public var summary: TrafficSummary
    public var apps: [AppReport]
    public var options: EngineOptions
    public var settings: ReportSettings
    /// Baseline findings of apps this run did not record at all.
    public var absentElsewhere: [AbsentFinding] = []
    /// The device's own traffic (app `system`: trustd's certificate fetches, ProxyAccess' SystemTraffic):
    /// listed, never judged under an app's policy, so it is in no app's findings, fixes or dictionary.
    public var system: [DestinationTraffic] = []

    /// The `app` of the device's own traffic (SystemTraffic.app, in the proxy's records).
    public static let systemApp = "system"

    /// Something was, or would be, blocked.
    public var wouldBlock: Bool { apps.contains { !$0.blocked.isEmpty } }
    public var isProven: Bool { apps.allSatisfy(\.suggestion.isProven) }

    /// What fails the gate: a block not in the baseline, and with `--require-quantum-secure` a new
    /// classical answer to a post-quantum offer.
    public var fails: Bool {
        apps.contains { app in
            app.destinations.contains { destination in
                destination.isNewlyBlocked
                    || (settings.requireQuantumSecure && destination.quantum == .classical && destination.quantumBaseline != .unchanged)
            }
        }
    }

    /// The logs that lost decisions (`log-overflow` records), and how many in all.
    public var incompleteInputs: [InputStats] { summary.inputs.filter { $0.overflowRecords > 0 || $0.dropped > 0 } }
    public var missingDecisions: Int { summary.inputs.reduce(0) { $0 + $1.dropped } }
    /// Decisions are or may be missing: `log-overflow` records, or runs without their run-stop.
    public var isIncomplete: Bool { !incompleteInputs.isEmpty || !incompleteRuns.isEmpty }

    /// Every reason the evidence is incomplete, one line each (the logs' losses, then the runs').
    public var incompleteDescriptions: [String] {
        incompleteInputs.map(\.incompleteDescription) + incompleteRuns.map(\.incompleteDescription)
    }

    /// Judges `summary` app by app under the matching policies.
    public init(summary: TrafficSummary, policies: [ReportPolicy], options: EngineOptions,
                settings: ReportSettings = ReportSettings()) {
        self.summary = summary
        self.options = options
        self.settings = settings
        var apps: [AppReport] = []
        let names = Set(summary.destinations.map(\.app)).union(summary.undirected.keys).sorted()
        system = summary.destinations.filter { $0.app == Report.systemApp }
        for app in names where app != Report.systemApp {
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
                                     undirected: summary.undirected[app] ?? [:], options: options,
                                     consolidate: settings.consolidate))
        }
        for index in apps.indices { apps[index].outsideSystemProxy = summary.paths.outsideSystemProxy(app: apps[index].app) }
        self.apps = apps
        if let baseline = settings.baseline { compare(with: baseline) }
    }

    static func judge(app: String, policy: ReportPolicy, note: String?, traffic: [DestinationTraffic],
                      undirected: [String: Int], options: EngineOptions, consolidate: Bool) -> AppReport {
        let source = policy.source
        let judge = DestinationJudge(policy: Policy(source), options: options)
        let findings = traffic.map(judge.findings)
        let planner = FixPlanner(source: source, options: options, traffic: traffic, findings: findings, judge: judge)
        let (fixes, narrowest, consolidated) = planner.plan()
        let changes = consolidate ? consolidated : narrowest
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
