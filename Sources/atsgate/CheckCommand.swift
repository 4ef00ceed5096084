import ArgumentParser
import ATSPolicy
import Foundation

/// `atsgate check`: explains the decision for each URL, without network access.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Explain the ATS decision for each URL (no network access).",
        discussion: """
            Prints one JSON object per URL. Exit status: 0 when every URL is allowed or upgraded, \
            1 when any is blocked, 2 on a usage or policy-file error. A URL of "-" reads URLs from \
            standard input, one per line.
            """
    )

    enum Format: String, ExpressibleByArgument { case json, text }

    @OptionGroup var options: PolicyOptions

    @Option(name: .long, help: "The API the loads come through: app (URLSession), media (AVFoundation), web (WKWebView).")
    var context: LoadContext = .app

    @Option(name: .long, help: "json (one object per URL) or text (one line per URL).")
    var format: Format = .json

    @Argument(help: ArgumentHelp("URLs to explain (http://, https://, ws://, wss://).", valueName: "url"))
    var urls: [String]

    func run() throws {
        let engine = DecisionEngine(policy: try options.loadPolicy(), options: options.engineOptions)
        let inputs = try expandStandardInput(urls)
        // Validate every URL before printing anything, so a typo never yields partial output.
        var destinations: [(String, Destination)] = []
        for url in inputs {
            do {
                destinations.append((url, try Destination.parse(url: url)))
            } catch {
                throw CommandFailure(message: "invalid URL \(error.description)")
            }
        }
        var anyBlocked = false
        var output = ""
        for (url, destination) in destinations {
            let decision = engine.decide(destination, context: context)
            if decision.action == .block { anyBlocked = true }
            switch format {
            case .json:
                output += JSONValue.object([("url", .string(url))] + decision.jsonFields).compact + "\n"
            case .text:
                let code = decision.reason.map { " \($0.rawValue)" } ?? ""
                output += "\(decision.action.rawValue.uppercased())\(code) \(url): \(decision.message)\n"
            }
        }
        FileHandle.standardOutput.write(Data(output.utf8))
        if anyBlocked { throw ExitCode(1) }
    }

    private func expandStandardInput(_ arguments: [String]) throws -> [String] {
        guard arguments.contains("-") else { return arguments }
        let text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return arguments.flatMap { $0 == "-" ? lines : [$0] }
    }
}
