import ATSPolicy
import Foundation

extension LintSeverity {
    /// SARIF `level`: error and high are errors, medium a warning, low and info notes.
    public var sarifLevel: String {
        switch self {
        case .error, .high: "error"
        case .medium: "warning"
        case .low, .info: "note"
        }
    }

    /// GitHub code scanning's `security-severity` (0-10): high >= 7, medium >= 4, low below.
    public var securitySeverity: String {
        switch self {
        case .high: "8.0"
        case .error: "6.5"
        case .medium: "5.0"
        case .low: "3.0"
        case .info: "1.0"
        }
    }
}

extension LintRule {
    /// SARIF's `name`: the id in PascalCase (`arbitrary-loads` is `ArbitraryLoads`).
    public var sarifName: String {
        id.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// A `reportingDescriptor` for `tool.driver.rules`.
    var sarifDescriptor: JSONValue {
        var tags: [JSONValue] = ["security", "app-transport-security"]
        if justification { tags.append("app-review") }
        return .object([
            ("id", .string(id)),
            ("name", .string(sarifName)),
            ("shortDescription", .object([("text", .string(title))])),
            ("fullDescription", .object([("text", .string("\(summary) (\(specRules.joined(separator: ", ")))"))])),
            ("help", .object([("text", .string(help))])),
            ("helpUri", .string(LintReport.atsDocumentation)),
            ("defaultConfiguration", .object([("level", .string(severity.sarifLevel))])),
            ("properties", .object([
                ("security-severity", .string(severity.securitySeverity)),
                ("severity", .string(severity.rawValue)),
                ("justification", .bool(justification)),
                ("tags", .array(tags)),
            ])),
        ])
    }
}

extension LintReport {
    public static let sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"
    /// Apple's reference for the keys the rules are about.
    public static let atsDocumentation =
        "https://developer.apple.com/documentation/bundleresources/information-property-list/nsapptransportsecurity"

    /// A SARIF 2.1.0 log with one run: every rule in `tool.driver.rules` (in `LintRule` order, so indexes
    /// are stable), one result per finding, and a notification per unreadable file.
    public func sarif(toolVersion: String, informationURI: String = LintReport.atsDocumentation) -> JSONValue {
        let rules = LintRule.allCases
        var results: [JSONValue] = []
        for file in files where file.error == nil {
            for finding in file.findings {
                results.append(sarifResult(finding, file: file,
                                           ruleIndex: rules.firstIndex(of: finding.rule) ?? 0))
            }
        }
        let notifications: [JSONValue] = files.compactMap { file in
            guard let error = file.error else { return nil }
            return .object([
                ("level", "error"),
                ("message", .object([("text", .string(error))])),
                ("locations", .array([.object([("physicalLocation", .object([
                    ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(file.path)))])),
                ]))])])),
            ])
        }
        var invocation: [(String, JSONValue)] = [("executionSuccessful", .bool(notifications.isEmpty))]
        if !notifications.isEmpty { invocation.append(("toolExecutionNotifications", .array(notifications))) }
        let run: JSONValue = .object([
            ("tool", .object([("driver", .object([
                ("name", "atsgate"),
                ("version", .string(toolVersion)),
                ("semanticVersion", .string(toolVersion)),
                ("informationUri", .string(informationURI)),
                ("rules", .array(rules.map(\.sarifDescriptor))),
            ]))])),
            ("invocations", .array([.object(invocation)])),
            ("results", .array(results)),
            ("properties", .object([("profile", .string(profile.rawValue))])),
        ])
        return .object([
            ("$schema", .string(LintReport.sarifSchema)),
            ("version", "2.1.0"),
            ("runs", .array([run])),
        ])
    }

    private func sarifResult(_ finding: LintFinding, file: LintFileResult, ruleIndex: Int) -> JSONValue {
        var physical: [(String, JSONValue)] = [
            ("artifactLocation", .object([("uri", .string(LintReport.sarifURI(file.path)))])),
        ]
        if let line = finding.line { physical.append(("region", .object([("startLine", .int(line))]))) }
        return .object([
            ("ruleId", .string(finding.id)),
            ("ruleIndex", .int(ruleIndex)),
            ("level", .string(finding.severity.sarifLevel)),
            ("message", .object([("text", .string(finding.message))])),
            ("locations", .array([.object([
                ("physicalLocation", .object(physical)),
                ("logicalLocations", .array([.object([("fullyQualifiedName", .string(finding.keyPath.description))])])),
            ])])),
            ("properties", .object([
                ("severity", .string(finding.severity.rawValue)),
                ("justification", .bool(finding.justification)),
            ])),
        ])
    }

    /// The path as given, percent-encoded where a URI reference needs it (spaces, `%`, `#`, `?`).
    public static func sarifURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "%;")
        return path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
    }
}
