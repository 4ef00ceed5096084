import ArgumentParser
import ATSPolicy
import ATSReport
import Foundation

/// `atsgate report`: the staging gate's verdict from decision logs.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Judge decision logs and HAR captures under the app's policy: what would break, the fix, unused keys.",
        discussion: """
            Reads decision logs (JSON lines: files, directories, - for standard input, .gz by extension; \
            logs of several proxies merge) and HAR 1.2 captures (.har, .har.gz; ID=FILE.har counts its \
            entries as app ID's; without it, with one --policy, as that policy's app: its ID, its \
            CFBundleIdentifier or its file name, as the proxy names it) and says per app and destination what was or would be blocked, the \
            narrowest change to the ATS dictionary that allows it (keys on the exact host; a parent entry \
            as the alternative) or that no key can, which keys no recorded decision used, and which servers \
            answer a post-quantum key exchange offer with a classical group. --format plist prints the \
            suggested NSAppTransportSecurity, proven against every recorded destination. With --baseline \
            (an earlier --format json report) only findings it does not have count. Exit status: 0 when \
            nothing new was or would be blocked, 1 when something was or would be (or, for plist, the \
            suggestion could not be proven), 2 when an input cannot be read or a log lost decisions \
            (log-overflow records, or a run of the daemon that ended without its run-stop record: \
            killed) without --allow-incomplete.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, junit, sarif, html, plist }
    enum FailOn: String, ExpressibleByArgument, CaseIterable { case block, never }

    @Option(name: .long, help: ArgumentHelp("The app's ATS policy (repeatable): Info.plist, bare ATS plist or JSON; "
                                            + "ID=FILE for the records of app ID.", valueName: "[id=]file"))
    var policy: [String] = []

    @Option(name: .long, help: "text, json, junit, sarif (2.1.0), html or plist (the suggested dictionary).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp("Write the report to FILE instead of standard output.", valueName: "file"))
    var output: String?

    @Option(name: .long, help: "block: exit 1 when something was or would be blocked; never: exit 0 unless an input is unreadable.")
    var failOn: FailOn = .block

    @Option(name: .long, help: "Which OS generation's rules apply: ios9, ios10 or ios17.")
    var profile: Profile = .ios17

    @Flag(name: .long, help: "Do not apply the built-in exceptions (apple.com and others).")
    var noBuiltinExceptions = false

    @Option(name: .long, help: ArgumentHelp("A local network (repeatable; replaces the default list).", valueName: "cidr"))
    var localNetwork: [IPNetwork] = []

    @Option(name: .long, help: ArgumentHelp("An earlier --format json report: only findings it does not have (new) "
                                            + "count for the exit status; the others are unchanged or absent.", valueName: "file"))
    var baseline: String?

    @Flag(name: .long, help: ArgumentHelp("The suggested dictionary (--format plist) uses one parent entry with "
                                          + "NSIncludesSubdomains where several subdomains need the same key."))
    var consolidate = false

    @Flag(name: .long, help: "Judge logs that lost decisions (log-overflow records, runs without their run-stop) instead of exiting 2; the report still says what is missing.")
    var allowIncomplete = false

    @Flag(name: .long, help: "A server that answered a post-quantum key exchange offer with a classical group fails the gate.")
    var requireQuantumSecure = false

    @Argument(help: ArgumentHelp("Decision logs (files, directories, - for standard input) and HAR captures (.har; "
                                 + "ID=FILE.har for app ID, else the app of the one --policy, else the file's name); "
                                 + ".gz is decompressed.", valueName: "log"))
    var logs: [String]

    func run() throws {
        var policies: [ReportPolicy] = []
        for argument in policy {
            do {
                policies.append(try ReportPolicy.load(argument))
            } catch {
                throw CommandFailure(message: error.description)
            }
        }
        var settings = ReportSettings(consolidate: consolidate, requireQuantumSecure: requireQuantumSecure,
                                      allowIncomplete: allowIncomplete)
        if let baseline {
            do {
                settings.baseline = try Baseline.load(baseline)
            } catch {
                throw CommandFailure(message: error.description)
            }
        }
        let summary: TrafficSummary
        do {
            // One policy: a capture without ID= is that app's (not its file's name), so that the same app's
            // captures are one app, and a baseline of one run matches the next.
            summary = try TrafficSummary.read(logs, harApp: policies.count == 1 ? policies[0].appID : nil)
        } catch {
            throw CommandFailure(message: error.description)
        }
        guard summary.records > 0 else {
            let lines = summary.inputs.reduce(0) { $0 + $1.lines }
            let names = summary.inputs.map(\.path).joined(separator: ", ")
            let har = !summary.inputs.isEmpty && summary.inputs.allSatisfy { $0.kind == .har }
            throw CommandFailure(message: har
                ? "\(names): no HAR entries with an http(s) load (\(lines) entr\(lines == 1 ? "y" : "ies") read)"
                : "\(names.isEmpty ? "no input" : names): no atsgate decision records "
                    + "(\(lines) line\(lines == 1 ? "" : "s") read, none a decision record)")
        }
        let options = EngineOptions(profile: profile, builtinExceptions: !noBuiltinExceptions,
                                    localNetworks: localNetwork.isEmpty ? EngineOptions.defaultLocalNetworks : localNetwork,
                                    cleartext: .block)
        let report = Report(summary: summary, policies: policies, options: options, settings: settings)
        let output = try ReportOutput(path: self.output)
        switch format {
        case .text: output.write(report.text)
        case .json:
            // Written as it is rendered: a report of thousands of destinations is never one String.
            report.writeJSON(output.write)
            output.write("\n")
        case .junit: output.write(report.junit)
        case .sarif: output.write(report.sarif(toolVersion: AtsgateVersion.string).pretty + "\n")
        case .html: output.write(report.html)
        case .plist: output.write(report.plist)
        }
        try output.close()
        if report.isIncomplete, !allowIncomplete {
            // The artefacts are written (they say so too); the gate must not pass on part of the evidence.
            let logs = report.incompleteDescriptions.joined(separator: "; ")
            throw CommandFailure(message: "incomplete evidence: \(logs); --allow-incomplete judges the rest anyway")
        }
        guard failOn == .block else { return }
        if report.fails || (format == .plist && !report.isProven) { throw ExitCode(1) }
    }
}

/// Standard output or the --output file, written in large blocks.
final class ReportOutput {
    private let handle: FileHandle
    private let path: String?
    private var buffer: [UInt8] = []

    init(path: String?) throws {
        self.path = path
        guard let path else { handle = .standardOutput; return }
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw CommandFailure(message: "\(path): cannot write: \(String(cString: strerror(errno)).lowercased())")
        }
        handle = file
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 20 { flush() }
    }

    private func flush() {
        guard !buffer.isEmpty else { return }
        handle.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        flush()
        if path != nil { try handle.close() }
    }
}
