import ArgumentParser
import ATSLint
import ATSPolicy
import Foundation

/// `atsgate lint`: audits ATS dictionaries and reports findings with id, severity, key path, message and
/// whether App Review needs a justification.
struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Audit ATS dictionaries (Info.plist, bare ATS plist or JSON).",
        discussion: """
            Exit status: 0 when no finding is at error or high severity, 1 when any is, 2 when any file \
            cannot be read as a policy (the other files are still linted and reported).
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, sarif }

    @Option(name: .long, help: "text (one line per finding), json (one document) or sarif (SARIF 2.1.0).")
    var format: Format = .text

    @Option(name: .long, help: "Which OS generation's rules apply: ios9, ios10 or ios17.")
    var profile: Profile = .ios17

    @Argument(help: ArgumentHelp("Policy files to lint: plists, JSON, or .ipa and .app bundles (each bundle linted).",
                                 valueName: "file"))
    var files: [String]

    func run() throws {
        let linter = Linter(profile: profile)
        var results: [LintFileResult] = []
        var failures: [String] = []
        for path in files {
            if AppBundles.isBundle(path) {
                // One result per bundle, under the file as given; key paths start with the bundle's path.
                do {
                    for bundle in try AppBundles.load(path: path) {
                        var source = bundle.source
                        source.origin = path
                        results.append(linter.lintFile(source))
                    }
                } catch {
                    results.append(.unreadable(path: path, error: error.description))
                    failures.append(error.description)
                }
                continue
            }
            do {
                // One read serves both the parse and the line numbers.
                let data = try PolicyLoader.read(path: path)
                let source = try PolicyLoader.parse(data: data, origin: path)
                let text = source.format == .xmlPlist || source.format == .json ? String(data: data, encoding: .utf8) : nil
                results.append(linter.lintFile(source, text: text))
            } catch {
                results.append(.unreadable(path: path, error: error.description))
                failures.append(error.description)
            }
        }
        let report = LintReport(profile: profile, files: results)
        let output: String
        switch format {
        case .text: output = report.text
        case .json: output = report.json.pretty + "\n"
        case .sarif: output = report.sarif(toolVersion: AtsgateVersion.string).pretty + "\n"
        }
        FileHandle.standardOutput.write(Data(output.utf8))

        // Every unreadable file gets its own `atsgate: FILE: problem` line; the last ends the command.
        if let last = failures.last {
            for failure in failures.dropLast() {
                FileHandle.standardError.write(Data("atsgate: \(failure)\n".utf8))
            }
            throw CommandFailure(message: last, exitCode: 2)
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
