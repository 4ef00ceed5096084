import ATSLint
import ATSPolicy
import TrafficLogs

extension Report {
    /// The rules of the report's SARIF results, in `tool.driver.rules` order.
    static let sarifRules: [(id: String, name: String, level: String, text: String)] = [
        ("would-block", "WouldBlock", "error",
         "A recorded load was or would be blocked under the app's ATS dictionary"),
        ("unused-key", "UnusedKey", "warning",
         "A key of the ATS dictionary that no recorded decision used: a candidate to remove"),
        ("not-quantum-secure", "NotQuantumSecure", "note",
         "A server answered a post-quantum key exchange offer with a classical group (harvest now, decrypt later)"),
        ("not-checked", "NotChecked", "note",
         "An HTTPS destination whose handshake the input does not show, so its TLS rules were not judged"),
        ("refused-by-app", "RefusedByApp", "warning",
         "The app itself refused a server: its pinning or the device's trust evaluation ended the TLS handshake after the server's certificate"),
        ("outside-system-proxy", "OutsideSystemProxy", "warning",
         "A device that used the proxy also made connections around it (the transparent gate saw them): an app or API that ignores the system proxy, which ATS does not protect"),
        ("incomplete-evidence", "IncompleteEvidence", "error",
         "The proxy could not log every decision (log-overflow records), or a run ended without its run-stop "
            + "record: the verdict rests on part of the traffic"),
    ]

    static func sarifRuleIndex(_ id: String) -> Int { sarifRules.firstIndex { $0.id == id }! }

    /// SARIF's `baselineState` beside a result's other fields, when a baseline was given.
    static func baselineFields(_ state: BaselineState?) -> [(String, JSONValue)] {
        state.map { [("baselineState", .string($0.rawValue))] } ?? []
    }

    /// SARIF 2.1.0: a result per blocked destination, located on the key its fix changes (or the entry
    /// that decided it), and one per unused key, located on that key, so code scanning shows them on the
    /// Info.plist. Results of an app without a policy file are located on the first log read.
    public func sarif(toolVersion: String) -> JSONValue {
        var results: [JSONValue] = []
        for app in apps {
            let locator = app.policyText.flatMap { text in app.policy.format.flatMap { KeyLocator(text: text, format: $0) } }
            let prefix = LintKeyPath(prefix: app.policy.keyPathPrefix)
            func location(_ keys: [String]) -> JSONValue {
                var path = prefix
                for key in keys { path = path.appending(key) }
                var fields: [(String, JSONValue)] = []
                if app.policy.format == nil, let log = summary.inputs.first?.path, log != "-" {
                    // No policy file (the embedded default): the finding sits on the log that shows it.
                    fields.append(("physicalLocation", .object([
                        ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(log)))])),
                    ])))
                }
                if app.policy.format != nil {
                    var physical: [(String, JSONValue)] = [
                        ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(app.policy.origin)))])),
                    ]
                    if let line = locator?.line(of: path) { physical.append(("region", .object([("startLine", .int(line))]))) }
                    fields.append(("physicalLocation", .object(physical)))
                }
                fields.append(("logicalLocations", .array([.object([("fullyQualifiedName", .string(path.description))])])))
                return .object(fields)
            }
            for destination in app.blocked {
                var text = "\(destination.traffic.url) was or would be blocked for \(app.app): "
                    + destination.findings.map { "\($0.reason) (\($0.detail))" }.joined(separator: "; ")
                var keys: [String] = []
                if let fix = destination.fix {
                    if !fix.changes.isEmpty {
                        text += ". Fix: " + fix.changes.map(\.summary).joined(separator: ", ")
                        text += fix.needsJustification ? " (App Review asks for a justification)." : " (no justification needed)."
                        keys = fix.changes[0].keyPath
                    }
                    for item in fix.unfixable { text += " No key: \(item.advice)." }
                }
                if keys.isEmpty, let entry = destination.decision?.exception?.entry, !entry.isBuiltin {
                    keys = [ATSKey.exceptionDomains, entry.key]
                }
                if let alternative = destination.fix?.alternative {
                    text += " Alternative (--consolidate): " + alternative.changes.map(\.summary).joined(separator: ", ")
                        + "; \(alternative.summary); \(alternative.opens)."
                }
                results.append(.object([
                    ("ruleId", "would-block"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("would-block"))),
                    ("level", "error"),
                    ("message", .object([("text", .string(text))])),
                    ("locations", .array([location(keys)])),
                    ("properties", .object([
                        ("app", .string(app.app)),
                        ("url", .string(destination.traffic.url)),
                        ("reasons", .array(destination.findings.map { .string($0.reason) })),
                        ("records", .int(destination.traffic.records)),
                    ])),
                ] + Report.baselineFields(destination.baseline)))
            }
            for (index, key) in app.unused.enumerated() {
                results.append(.object([
                    ("ruleId", "unused-key"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("unused-key"))),
                    ("level", "warning"),
                    ("message", .object([("text", .string("\(key.change.keyPath.joined(separator: ".")) is unused by "
                        + "\(app.app): \(key.note). Removing it shrinks what App Review asks to justify."))])),
                    ("locations", .array([location(key.change.keyPath)])),
                    ("properties", .object([("app", .string(app.app))])),
                ] + Report.baselineFields(index < app.unusedBaseline.count ? app.unusedBaseline[index] : nil)))
            }
            for destination in app.quantum(.classical) {
                let groups = destination.traffic.keyExchangeGroups.joined(separator: ", ")
                results.append(.object([
                    ("ruleId", "not-quantum-secure"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("not-quantum-secure"))),
                    ("level", .string(settings.requireQuantumSecure ? "error" : "note")),
                    ("message", .object([("text", .string("\(destination.traffic.url) answered a post-quantum key exchange "
                        + "offer from \(app.app) with a classical group (\(groups)): its traffic can be recorded now and "
                        + "decrypted later. Enable X25519MLKEM768 on the server."))])),
                    ("locations", .array([location([])])),
                    ("properties", .object([
                        ("app", .string(app.app)), ("url", .string(destination.traffic.url)),
                        ("groups", .array(destination.traffic.keyExchangeGroups.map(JSONValue.string))),
                    ])),
                ] + Report.baselineFields(destination.quantumBaseline)))
            }
            for destination in app.notChecked {
                results.append(.object([
                    ("ruleId", "not-checked"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("not-checked"))),
                    ("level", "note"),
                    ("message", .object([("text", .string("\(destination.traffic.url) was not checked for \(app.app): "
                        + destination.notChecked! + "."))])),
                    ("locations", .array([location([])])),
                    ("properties", .object([("app", .string(app.app)), ("url", .string(destination.traffic.url))])),
                ]))
            }
            for destination in app.refusedByApp {
                let traffic = destination.traffic
                // On the app's pin for the host when it has one (the likeliest cause), else on the policy.
                let keys = destination.decision?.pin.map { [ATSKey.pinnedDomains, $0.key] } ?? []
                let devices = traffic.devices.isEmpty ? "" : " on " + traffic.deviceNames.joined(separator: ", ")
                results.append(.object([
                    ("ruleId", "refused-by-app"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("refused-by-app"))),
                    ("level", "warning"),
                    ("message", .object([("text", .string("\(app.app) refused the server of \(traffic.url)\(devices): "
                        + "\(traffic.clientRefusalSummary) (the TLS alert it sent; encrypted: TLS 1.3). Its pinning or the "
                        + "device's trust evaluation rejected the certificate the proxy let through."))])),
                    ("locations", .array([location(keys)])),
                    ("properties", .object([
                        ("app", .string(app.app)), ("url", .string(traffic.url)),
                        ("alerts", .object(traffic.clientRefusals.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                        ("devices", .array(traffic.deviceNames.map(JSONValue.string))),
                    ])),
                ]))
            }
            for outside in app.outsideSystemProxy {
                results.append(.object([
                    ("ruleId", "outside-system-proxy"),
                    ("ruleIndex", .int(Report.sarifRuleIndex("outside-system-proxy"))),
                    ("level", "warning"),
                    ("message", .object([("text", .string("\(app.app) on device \(outside.device): \(outside.summary) ("
                        + OutsideSystemProxy.meaning + "): " + outside.destinations.joined(separator: ", ") + "."))])),
                    ("locations", .array([location([])])),
                    ("properties", .object([
                        ("app", .string(app.app)), ("device", .string(outside.device)), ("connections", .int(outside.connections)),
                        ("destinations", .array(outside.destinations.map(JSONValue.string))),
                    ])),
                ]))
            }
            for finding in app.absent { results.append(absentResult(finding, location: location([]))) }
        }
        for finding in absentElsewhere { results.append(absentResult(finding, location: nil)) }
        for input in incompleteInputs {
            results.append(.object([
                ("ruleId", "incomplete-evidence"),
                ("ruleIndex", .int(Report.sarifRuleIndex("incomplete-evidence"))),
                ("level", .string(settings.allowIncomplete ? "warning" : "error")),
                ("message", .object([("text", .string("Incomplete evidence: \(input.incompleteDescription)."))])),
                ("locations", .array([.object([("physicalLocation", .object([
                    ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(input.path)))])),
                ]))])])),
                ("properties", .object([("dropped", .int(input.dropped)), ("log_overflow_records", .int(input.overflowRecords))])),
            ]))
        }
        for run in incompleteRuns {
            results.append(.object([
                ("ruleId", "incomplete-evidence"),
                ("ruleIndex", .int(Report.sarifRuleIndex("incomplete-evidence"))),
                ("level", .string(settings.allowIncomplete ? "warning" : "error")),
                ("message", .object([("text", .string("Incomplete evidence: \(run.incompleteDescription)."))])),
                ("locations", .array([.object([("physicalLocation", .object([
                    ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(run.inputs.last ?? "-")))])),
                ]))])])),
                ("properties", .object([("run", .string(run.id)), ("pid", run.pid.map(JSONValue.int) ?? .null),
                                        ("version", .optional(run.version)),
                                        ("open_at_last_checkpoint", run.lastCheckpoint.map { .int($0.open) } ?? .null),
                                        ("log_ends_after_s", .double(Double(run.silence) / 1000))])),
            ]))
        }
        let run: JSONValue = .object([
            ("tool", .object([("driver", .object([
                ("name", "atsgate"),
                ("version", .string(toolVersion)),
                ("semanticVersion", .string(toolVersion)),
                ("informationUri", .string(LintReport.atsDocumentation)),
                ("rules", .array(Report.sarifRules.map { rule in
                    .object([
                        ("id", .string(rule.id)),
                        ("name", .string(rule.name)),
                        ("shortDescription", .object([("text", .string(rule.text))])),
                        ("helpUri", .string(LintReport.atsDocumentation)),
                        ("defaultConfiguration", .object([("level", .string(rule.level))])),
                        ("properties", .object([("tags", .array(["security", "app-transport-security"]))])),
                    ])
                })),
            ]))])),
            ("invocations", .array([.object([("executionSuccessful", .bool(!isIncomplete || settings.allowIncomplete))]
                + (isIncomplete ? [("toolExecutionNotifications", .array(incompleteDescriptions.map { line in
                    .object([("level", .string(settings.allowIncomplete ? "warning" : "error")),
                             ("message", .object([("text", .string("incomplete evidence: \(line)"))]))])
                }))] : []))])),
            ("results", .array(results)),
            ("properties", .object([("profile", .string(options.profile.rawValue)), ("records", .int(summary.records)),
                                    ("missing_decisions", .int(missingDecisions))])),
        ])
        return .object([
            ("$schema", .string(LintReport.sarifSchema)),
            ("version", "2.1.0"),
            ("runs", .array([run])),
        ])
    }
}

extension Report {
    /// A baseline finding this run no longer has: SARIF's `absent` state, a pass, not an alert.
    func absentResult(_ finding: AbsentFinding, location: JSONValue?) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("ruleId", .string(finding.rule)),
            ("ruleIndex", .int(Report.sarifRuleIndex(finding.rule))),
            ("kind", "pass"),
            ("level", "none"),
            ("message", .object([("text", .string("Absent since the baseline: \(finding.app): \(finding.summary)."))])),
        ]
        if let location { fields.append(("locations", .array([location]))) }
        fields.append(("properties", .object([("app", .string(finding.app)), ("subject", .string(finding.subject)),
                                              ("reasons", .array(finding.reasons.map(JSONValue.string)))])))
        fields.append(("baselineState", "absent"))
        return .object(fields)
    }
}
