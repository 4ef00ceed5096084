import ATSPolicy
extension LintFinding {
    /// `{"id","severity","keyPath","message","justification","line"?}`.
    public var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("id", .string(id)),
            ("severity", .string(severity.rawValue)),
            ("keyPath", .string(keyPath.description)),
            ("message", .string(message)),
            ("justification", .bool(justification)),
        ]
        if let line { fields.append(("line", .int(line))) }
        return .object(fields)
    }
}

extension LintReport {
    /// One JSON document: `{"profile", "files": [...], "summary": {...}}`. An unreadable file has an
    /// `error` field instead of findings.
    public var json: JSONValue {
        let fileValues: [JSONValue] = files.map { file in
            if let error = file.error {
                return .object([("file", .string(file.path)), ("error", .string(error))])
            }
            return .object([
                ("file", .string(file.path)),
                ("format", .optional(file.format?.rawValue)),
                ("root", .optional(file.root?.rawValue)),
                ("findings", .array(file.findings.map(\.json))),
                ("summary", LintReport.summaryJSON(file.findings)),
            ])
        }
        var summary: [(String, JSONValue)] = [
            ("files", .int(files.count)),
            ("unreadable", .int(unreadableCount)),
        ]
        if case .object(let counts) = LintReport.summaryJSON(findings) { summary += counts }
        return .object([
            ("profile", .string(profile.rawValue)),
            ("files", .array(fileValues)),
            ("summary", .object(summary)),
        ])
    }

    /// `{"findings": N, "error": n, "high": n, ...}`.
    static func summaryJSON(_ findings: [LintFinding]) -> JSONValue {
        .object([("findings", .int(findings.count))] + counts(findings).map { ($0.0.rawValue, .int($0.1)) })
    }
}
