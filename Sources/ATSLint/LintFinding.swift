import ATSPolicy
/// How much a finding matters, most severe first (the rubric is on `LintRule`).
public enum LintSeverity: String, Sendable, CaseIterable {
    case error
    case high
    case medium
    case low
    case info

    /// Findings at these severities make `atsgate lint` exit 1.
    public var failsLint: Bool { self == .error || self == .high }
}

/// One problem the linter found, at one key of the dictionary.
public struct LintFinding: Sendable, Equatable {
    public var rule: LintRule
    /// Where: from the file's root, so a whole Info.plist's paths start with `NSAppTransportSecurity`.
    public var keyPath: LintKeyPath
    /// What happens at run time and what to do, naming the key and citing the rule.
    public var message: String
    /// The 1-based line of the key in the file's text, when the text is XML or JSON.
    public var line: Int?

    public init(rule: LintRule, keyPath: LintKeyPath, message: String, line: Int? = nil) {
        self.rule = rule
        self.keyPath = keyPath
        self.message = message
        self.line = line
    }

    public var id: String { rule.id }
    public var severity: LintSeverity { rule.severity }
    public var justification: Bool { rule.justification }

    /// The report order: by key path, then id, then message (for several findings of one rule at one key).
    static func inReportOrder(_ lhs: LintFinding, _ rhs: LintFinding) -> Bool {
        let left = lhs.keyPath.description, right = rhs.keyPath.description
        if left != right { return left < right }
        if lhs.id != rhs.id { return lhs.id < rhs.id }
        return lhs.message < rhs.message
    }
}
