import ATSLint
import ATSPolicy

extension Report {
    /// The rules of the report's SARIF results, in `tool.driver.rules` order.
    static let sarifRules: [(id: String, name: String, level: String, text: String)] = [
        ("would-block", "WouldBlock", "error",
         "A recorded load was or would be blocked under the app's ATS dictionary"),
        ("unused-key", "UnusedKey", "warning",
         "A key of the ATS dictionary that no recorded decision used: a candidate to remove"),
    ]

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
                results.append(.object([
                    ("ruleId", "would-block"),
                    ("ruleIndex", 0),
                    ("level", "error"),
                    ("message", .object([("text", .string(text))])),
                    ("locations", .array([location(keys)])),
                    ("properties", .object([
                        ("app", .string(app.app)),
                        ("url", .string(destination.traffic.url)),
                        ("reasons", .array(destination.findings.map { .string($0.reason) })),
                        ("records", .int(destination.traffic.records)),
                    ])),
                ]))
            }
            for key in app.unused {
                results.append(.object([
                    ("ruleId", "unused-key"),
                    ("ruleIndex", 1),
                    ("level", "warning"),
                    ("message", .object([("text", .string("\(key.change.keyPath.joined(separator: ".")) is unused by "
                        + "\(app.app): \(key.note). Removing it shrinks what App Review asks to justify."))])),
                    ("locations", .array([location(key.change.keyPath)])),
                    ("properties", .object([("app", .string(app.app))])),
                ]))
            }
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
            ("invocations", .array([.object([("executionSuccessful", true)])])),
            ("results", .array(results)),
            ("properties", .object([("profile", .string(options.profile.rawValue)), ("records", .int(summary.records))])),
        ])
        return .object([
            ("$schema", .string(LintReport.sarifSchema)),
            ("version", "2.1.0"),
            ("runs", .array([run])),
        ])
    }
}
