import ATSPolicy

/// One run of the checks over one dictionary; its passes extend it (GlobalKeyPass.swift and the others).
package struct LintPass {
    let source: PolicySource
    let profile: Profile
    let policy: Policy
    /// The engine over the whole policy, for checks that compare decisions.
    let engine: DecisionEngine
    /// The engine with no exception entries at all (app or built-in): the local exemption and global keys.
    let withoutExceptions: DecisionEngine
    /// The path of the ATS dictionary itself.
    let root: LintKeyPath
    private(set) var findings: [LintFinding] = []

    init(source: PolicySource, profile: Profile) {
        self.source = source
        self.profile = profile
        self.policy = Policy(source)
        self.engine = DecisionEngine(policy: policy, options: EngineOptions(profile: profile))
        var bare = policy
        bare.exceptionDomains = [:]
        self.withoutExceptions = DecisionEngine(policy: bare,
                                                options: EngineOptions(profile: profile, builtinExceptions: false))
        var root = LintKeyPath(prefix: source.keyPathPrefix)
        if let bundle = source.bundlePath { root.components.insert(.key(bundle), at: 0) }
        self.root = root
    }

    /// `line` for a finding that knows its own (else the key path's line is looked up).
    mutating func report<Rule: LintRuleDefinition>(_ rule: Rule, at path: LintKeyPath, line: Int? = nil,
                                                   related: [LintRelatedLine] = []) {
        findings.append(LintFinding(rule: Rule.rule, keyPath: path, message: rule.message, line: line,
                                    related: related))
    }
}
