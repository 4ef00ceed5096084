import ATSLint
import ATSPolicy
import TrafficLogs

extension Report {
    /// JUnit XML for CI test views: one test suite per app, one test case per destination, a failure
    /// for each that was or would be blocked (the reasons and the fix), and each unused key as a skipped
    /// case so it shows without failing the build. Against a baseline, unchanged blocks are skipped
    /// cases and absent ones passing cases; a destination whose handshake could not be checked is
    /// skipped; the quantum-secure verdicts are cases of their own (a classical answer fails only with
    /// `--require-quantum-secure`); a server the app itself refused is a skipped case of its own; a log
    /// that lost decisions, and a run that ended without its run-stop, is an error case.
    public var junit: String {
        var suites: [JUnitSuite] = []
        if isIncomplete {
            var evidence = JUnitSuite(name: "evidence", properties: [("missing_decisions", "\(missingDecisions)")])
            for input in summary.inputs {
                var testCase = JUnitCase(classname: "evidence", name: input.path)
                if input.overflowRecords > 0 || input.dropped > 0 {
                    testCase.outcome = settings.allowIncomplete
                        ? .skipped("incomplete (--allow-incomplete): \(input.incompleteDescription)")
                        : .error(type: "log-overflow", message: "incomplete: \(input.incompleteDescription)")
                }
                testCase.output = "\(input.records) records from \(input.lines) \(input.units)"
                evidence.cases.append(testCase)
            }
            let incomplete = Set(incompleteRuns.map(\.id))
            for run in summary.runs where run.hasLedger {
                var testCase = JUnitCase(classname: "evidence", name: "run \(run.id)")
                if incomplete.contains(run.id) {
                    testCase.outcome = settings.allowIncomplete
                        ? .skipped("incomplete (--allow-incomplete): \(run.incompleteDescription)")
                        : .error(type: "run-incomplete", message: "incomplete: \(run.incompleteDescription)")
                }
                testCase.output = "\(run.decisions) decision records" + (run.stop.map { ", stopped (\($0.stop))" } ?? "")
                evidence.cases.append(testCase)
            }
            suites.append(evidence)
        }
        for app in apps { suites.append(app.junitSuite(self)) }
        if !absentElsewhere.isEmpty {
            var suite = JUnitSuite(name: "baseline", properties: [])
            suite.cases = absentElsewhere.map { JUnitCase(classname: "\($0.app).absent", name: $0.subject, output: $0.summary) }
            suites.append(suite)
        }
        return JUnitSuite.document(suites)
    }
}

extension AppReport {
    func junitSuite(_ report: Report) -> JUnitSuite {
        let first = destinations.map(\.traffic.firstTime).min() ?? 0
        var suite = JUnitSuite(name: app, properties: [
            ("policy", policy.origin), ("profile", report.options.profile.rawValue), ("records", "\(records)"),
        ])
        suite.timestamp = String(Timestamp.text(first).dropLast(5))
        for destination in destinations {
            let traffic = destination.traffic
            var testCase = JUnitCase(classname: app, name: traffic.url, time: Double(max(0, traffic.lastTime - traffic.firstTime)) / 1000)
            if destination.isBlocked {
                let reasons = destination.findings.map(\.reason).joined(separator: ", ")
                if destination.baseline == .unchanged {
                    testCase.outcome = .skipped("unchanged since the baseline: would be blocked: \(reasons)")
                } else {
                    let prefix = destination.baseline == .new ? "new since the baseline: " : ""
                    testCase.outcome = .failure(type: destination.findings.first!.reason,
                                                message: "\(prefix)would be blocked: \(reasons)", body: destination.junitBody)
                }
            } else if let notChecked = destination.notChecked {
                testCase.outcome = .skipped("not checked: \(notChecked)")
            }
            let actions = LoggedAction.allCases.compactMap { traffic.count($0) == 0 ? nil : "\(traffic.count($0)) \($0.name)" }
            var summary = "\(traffic.records) records (" + actions.joined(separator: ", ") + "), "
            summary += Timestamp.text(traffic.firstTime) + " .. " + Timestamp.text(traffic.lastTime)
            if !traffic.tlsVersions.isEmpty { summary += "; TLS " + traffic.tlsVersions.joined(separator: ", ") }
            if !traffic.devices.isEmpty { summary += "; devices " + traffic.deviceNames.joined(separator: ", ") }
            testCase.output = summary
            suite.cases.append(testCase)
        }
        for (index, key) in unused.enumerated() {
            let path = LintKeyPath(key.change.keyPath.map(LintKeyPath.Component.key)).description
            let state = index < unusedBaseline.count ? " (\(unusedBaseline[index].rawValue) since the baseline)" : ""
            suite.cases.append(JUnitCase(classname: "\(app).unused", name: path, outcome: .skipped("unused: \(key.note)\(state)")))
        }
        // The app's own refusals: shown, skipped rather than failed (no change to the policy fixes them,
        // and the gate's verdict is about ATS).
        for destination in refusedByApp {
            let traffic = destination.traffic
            let devices = traffic.devices.isEmpty ? "" : " on " + traffic.deviceNames.joined(separator: ", ")
            suite.cases.append(JUnitCase(classname: "\(app).refused-by-app", name: traffic.url,
                                         outcome: .skipped("the app refused this server\(devices): \(traffic.clientRefusalSummary)")))
        }
        // Connections around the system proxy: shown, skipped (they were judged like any other; what
        // they reveal is an API that ignores the proxy).
        for outside in outsideSystemProxy {
            suite.cases.append(JUnitCase(classname: "\(app).outside-system-proxy", name: outside.device,
                                         outcome: .skipped("\(outside.summary) (\(OutsideSystemProxy.meaning)): "
                                                           + outside.destinations.joined(separator: ", "))))
        }
        if recordsKeyExchange {
            for destination in destinations {
                guard let status = destination.quantum else { continue }
                var testCase = JUnitCase(classname: "\(app).quantum-secure", name: destination.traffic.url)
                let groups = destination.traffic.keyExchangeGroups.joined(separator: ", ")
                switch status {
                case .postQuantum:
                    testCase.output = "post-quantum: \(groups)"
                case .unknown:
                    testCase.outcome = .skipped("unknown: never seen with a post-quantum offer")
                case .classical:
                    let message = "answered a post-quantum offer with a classical group (\(groups))"
                    if report.settings.requireQuantumSecure, destination.quantumBaseline != .unchanged {
                        testCase.outcome = .failure(type: Baseline.notQuantumSecure, message: message,
                                                    body: "\(destination.traffic.url) is not quantum-secure: " + message)
                    } else {
                        let state = destination.quantumBaseline == .unchanged ? " (unchanged since the baseline)" : ""
                        testCase.outcome = .skipped("not quantum-secure: \(message)\(state)")
                    }
                }
                suite.cases.append(testCase)
            }
        }
        for finding in absent {
            suite.cases.append(JUnitCase(classname: "\(app).absent", name: finding.subject, output: "absent since the baseline: \(finding.summary)"))
        }
        return suite
    }
}

extension DestinationReport {
    var junitBody: String {
        var body = findings.map { "\($0.reason): \($0.detail)" }.joined(separator: "\n")
        if let fix {
            if !fix.changes.isEmpty {
                body += "\nfix: " + fix.changes.map(\.summary).joined(separator: ", ")
                body += fix.needsJustification ? " (App Review asks for a justification)" : " (no justification needed)"
                if let scope = fix.scope { body += "\n" + scope }
            }
            if let alternative = fix.alternative {
                body += "\nalternative (--consolidate): " + alternative.changes.map(\.summary).joined(separator: ", ")
                    + "; \(alternative.summary); \(alternative.opens)"
            }
            for item in fix.unfixable { body += "\nno key: " + item.advice }
        }
        return body
    }
}

/// One JUnit test case and how it ended.
struct JUnitCase {
    enum Outcome {
        case pass
        case failure(type: String, message: String, body: String)
        case error(type: String, message: String)
        case skipped(String)
    }

    var classname: String
    var name: String
    var time: Double = 0
    var outcome = Outcome.pass
    var output: String?

    init(classname: String, name: String, time: Double = 0, outcome: Outcome = .pass, output: String? = nil) {
        self.classname = classname
        self.name = name
        self.time = time
        self.outcome = outcome
        self.output = output
    }
}

/// A JUnit test suite, and the document of several, with the counts every reader checks.
struct JUnitSuite {
    var name: String
    var properties: [(String, String)]
    var timestamp: String?
    var cases: [JUnitCase] = []

    init(name: String, properties: [(String, String)]) {
        self.name = name
        self.properties = properties
    }

    var counts: (failures: Int, errors: Int, skipped: Int) {
        var counts = (failures: 0, errors: 0, skipped: 0)
        for testCase in cases {
            switch testCase.outcome {
            case .pass: break
            case .failure: counts.failures += 1
            case .error: counts.errors += 1
            case .skipped: counts.skipped += 1
            }
        }
        return counts
    }

    static func document(_ suites: [JUnitSuite]) -> String {
        let all = suites.map(\.counts)
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"atsgate report\" tests=\"\(suites.reduce(0) { $0 + $1.cases.count })\""
            + " failures=\"\(all.reduce(0) { $0 + $1.failures })\" errors=\"\(all.reduce(0) { $0 + $1.errors })\""
            + " skipped=\"\(all.reduce(0) { $0 + $1.skipped })\">\n"
        for suite in suites { out += suite.xml }
        return out + "</testsuites>\n"
    }

    var xml: String {
        let counts = self.counts
        var out = "  <testsuite name=\"\(XML.attribute(name))\" tests=\"\(cases.count)\" failures=\"\(counts.failures)\""
            + " errors=\"\(counts.errors)\" skipped=\"\(counts.skipped)\""
        if let timestamp { out += " timestamp=\"\(timestamp)\"" }
        out += ">\n"
        if !properties.isEmpty {
            out += "    <properties>\n"
            for (name, value) in properties {
                out += "      <property name=\"\(XML.attribute(name))\" value=\"\(XML.attribute(value))\"/>\n"
            }
            out += "    </properties>\n"
        }
        for testCase in cases {
            out += "    <testcase classname=\"\(XML.attribute(testCase.classname))\" name=\"\(XML.attribute(testCase.name))\""
                + " time=\"\(testCase.time)\">\n"
            switch testCase.outcome {
            case .pass: break
            case .failure(let type, let message, let body):
                out += "      <failure type=\"\(XML.attribute(type))\" message=\"\(XML.attribute(message))\">\(XML.text(body))</failure>\n"
            case .error(let type, let message):
                out += "      <error type=\"\(XML.attribute(type))\" message=\"\(XML.attribute(message))\"/>\n"
            case .skipped(let message):
                out += "      <skipped message=\"\(XML.attribute(message))\"/>\n"
            }
            if let output = testCase.output { out += "      <system-out>" + XML.text(output) + "</system-out>\n" }
            out += "    </testcase>\n"
        }
        return out + "  </testsuite>\n"
    }
}

/// XML escaping for text and attribute values; characters XML 1.0 cannot carry are dropped.
enum XML {
    static func text(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\n", "\t", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func attribute(_ value: String) -> String {
        text(value).replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "\n", with: "&#10;")
    }
}
