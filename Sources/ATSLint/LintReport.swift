import ATSPolicy
/// The outcome of linting one file: its findings, or why it could not be read.
public struct LintFileResult: Sendable {
    /// The path as given on the command line.
    public var path: String
    public var format: PolicyFileFormat?
    public var root: PolicyRoot?
    public var findings: [LintFinding]
    /// Why the file could not be read as a policy (one line naming file and problem); no findings then.
    public var error: String?

    public init(path: String, format: PolicyFileFormat?, root: PolicyRoot?, findings: [LintFinding],
                error: String? = nil) {
        self.path = path
        self.format = format
        self.root = root
        self.findings = findings
        self.error = error
    }

    /// A file that could not be read.
    public static func unreadable(path: String, error: String) -> LintFileResult {
        LintFileResult(path: path, format: nil, root: nil, findings: [], error: error)
    }
}

/// Findings of one `atsgate lint` run over several files, with the counts the summaries print.
public struct LintReport: Sendable {
    public var profile: Profile
    public var files: [LintFileResult]

    public init(profile: Profile, files: [LintFileResult]) {
        self.profile = profile
        self.files = files
    }

    public var findings: [LintFinding] { files.flatMap(\.findings) }
    public var unreadableCount: Int { files.filter { $0.error != nil }.count }

    /// INTERFACE.md: 2 when any input is unreadable, else 1 when any finding is at error or high
    /// severity, else 0.
    public var exitStatus: Int32 {
        if unreadableCount > 0 { return 2 }
        return findings.contains { $0.severity.failsLint } ? 1 : 0
    }

    /// Counts per severity, most severe first, zeros included.
    static func counts(_ findings: [LintFinding]) -> [(LintSeverity, Int)] {
        LintSeverity.allCases.map { severity in (severity, findings.filter { $0.severity == severity }.count) }
    }

    /// `3 findings (1 high, 2 medium)`, `no findings`.
    static func summary(_ findings: [LintFinding]) -> String {
        guard !findings.isEmpty else { return "no findings" }
        let parts = counts(findings).filter { $0.1 > 0 }.map { "\($0.1) \($0.0.rawValue)" }
        return "\(findings.count) finding\(findings.count == 1 ? "" : "s") (\(parts.joined(separator: ", ")))"
    }
}
