import ArgumentParser

/// Placeholder replaced by the lint implementation.
struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "lint", abstract: "Audit ATS dictionaries.")
}
