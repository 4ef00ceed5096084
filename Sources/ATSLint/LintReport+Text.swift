import ATSPolicy
extension LintReport {
    /// One line per finding, `FILE: SEVERITY id keyPath: message [justification required]`, then a summary
    /// line per file, and a total when there are several files.
    public var text: String {
        var out = ""
        for file in files {
            if let error = file.error {
                // The error names the file already.
                let problem = error.hasPrefix(file.path + ": ") ? String(error.dropFirst(file.path.count + 2)) : error
                out += "\(file.path): not linted: \(problem)\n"
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
