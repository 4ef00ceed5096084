import ATSPolicy
extension LintReport {
    /// One line per finding, `FILE: SEVERITY id keyPath: message [justification required]`, then a summary
    /// line per file, and a total when there are several files.
    public var text: String {
        var out = ""
        for file in files {
            if let error = file.error {
                // The error names the file (and where it breaks) already: `FILE:LINE:COLUMN: not linted: ...`.
                let location = file.errorPosition.map { "\(file.path):\($0)" } ?? file.path
                let problem = error.hasPrefix(location + ": ") ? String(error.dropFirst(location.count + 2)) : error
                out += "\(location): not linted: \(problem)\n"
                continue
            }
            for finding in file.findings {
                out += "\(file.path): \(finding.severity.rawValue.uppercased()) \(finding.id) \(finding.keyPath): "
                    + finding.message
                    + (finding.justification ? " [justification required]" : "") + "\n"
            }
            out += "\(file.path): \(LintReport.summary(file.findings))\n"
        }
        if files.count > 1 {
            let linted = files.count - unreadableCount
            out += "total: \(LintReport.summary(findings)) in \(linted) file\(linted == 1 ? "" : "s")"
            if unreadableCount > 0 { out += "; \(unreadableCount) unreadable" }
            out += "\n"
        }
        return out
    }
}
