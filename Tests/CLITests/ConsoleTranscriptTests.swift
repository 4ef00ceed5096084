import Foundation
import Testing
import TestSupport

/// The ```console blocks of README.md and docs/ are transcripts: each `$ atsgate ...` line is run
/// against the binary this build made and its output compared with the block's, placeholders
/// allowed (CONTRIBUTING.md, "Transcripts"). A block that is not meant to run uses another fence
/// (```sh, ```text). Every failing block of a file is reported in one run.
@Suite(.serialized) struct ConsoleTranscriptTests {
    /// README.md and every page under docs/ that has a console block: one test case each, so a run
    /// names every page that differs, and within a page every block.
    static let pages: [String] = {
        let all = ["README.md"] + ((try? Transcript.markdownFiles(under: "docs")) ?? [])
        return all.filter { path in (try? ReferencePage(path))?.text.contains("```console") == true }
    }()

    @Test(arguments: pages)
    func theConsoleBlocksOfThePageRunAsWritten(page: String) throws {
        let failures = try Transcript.failures(in: page)
        #expect(failures.isEmpty, "\(failures.count) console block(s) differ:\n\n\(failures.joined(separator: "\n\n"))")
    }

    @Test func theReferencePagesHaveTranscripts() {
        #expect(Self.pages.contains("docs/reference/exit-codes.md"), "\(Self.pages)")
    }

    /// The convention itself: what each placeholder stands for, and `...` for any lines.
    @Test(arguments: [
        (["a", "...", "d"], ["a", "b", "c", "d"], true),
        (["a", "...", "b"], ["a", "b"], true),
        (["...", "z"], ["a", "b"], false),
        (["started <TIME> on port <PORT>"], ["started 2026-11-27T11:49:35.682Z on port 3128"], true),
        (["run <ID>: <N> records, <N> s"], ["run 3ea3b1c9282f0176: 12 records, 2.5 s"], true),
        (["pid <PID> from <PATH>"], ["pid 812 from /tmp/x/y.log"], true),
        (["atsgate <VERSION>"], ["atsgate 0.1.0"], true),
        (["a ... z"], ["a anything at all z"], true),
        (["port <PORT>"], ["port 31x"], false),
        (["exact [text] (here)?"], ["exact [text] (here)?"], true),
        (["exact"], ["exact", "and more"], false),
    ])
    func placeholdersMatchWhatVariesAndNothingElse(expected: [String], actual: [String], matches: Bool) {
        #expect(Transcript.matches(expected, actual) == matches)
    }
}

/// One ```console block: its commands, each with the output the page shows.
struct ConsoleBlock {
    var file: String
    var line: Int
    var steps: [(command: String, output: [String])]
}

enum Transcript {
    /// Commands a transcript may run: atsgate, `echo $?` after it, and filters of its output.
    static let filters: Set<String> = ["grep", "head", "tail", "jq", "sed", "wc", "sort", "cut", "tr", "python3"]

    static func markdownFiles(under folder: String) throws -> [String] {
        let root = ReferencePage.root.appendingPathComponent(folder)
        let walker = FileManager.default.enumerator(atPath: root.path)
        var files: [String] = []
        while let path = walker?.nextObject() as? String {
            if path.hasSuffix(".md") { files.append("\(folder)/\(path)") }
        }
        return files.sorted()
    }

    static func blocks(in page: ReferencePage) -> [ConsoleBlock] {
        var blocks: [ConsoleBlock] = []
        var current: ConsoleBlock?
        var indent = 0
        for (index, raw) in page.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if current == nil {
                if trimmed == "```console" {
                    indent = raw.prefix { $0 == " " }.count
                    current = ConsoleBlock(file: page.path, line: index + 1, steps: [])
                }
                continue
            }
            if trimmed == "```" {
                blocks.append(current!)
                current = nil
                continue
            }
            let line = String(raw.dropFirst(min(indent, raw.prefix { $0 == " " }.count)))
            if line.hasPrefix("$ ") {
                current!.steps.append((String(line.dropFirst(2)), []))
            } else if let last = current!.steps.indices.last {
                // A command continued with a trailing backslash stays one command.
                if current!.steps[last].output.isEmpty, current!.steps[last].command.hasSuffix("\\") {
                    current!.steps[last].command = current!.steps[last].command.dropLast().trimmingCharacters(in: .whitespaces) + " "
                        + line.trimmingCharacters(in: .whitespaces)
                } else {
                    current!.steps[last].output.append(line)
                }
            } else if !line.isEmpty {
                current!.steps.append(("", [line]))
            }
        }
        return blocks
    }

    /// Why the block cannot run, if it cannot.
    static func unrunnable(_ block: ConsoleBlock) -> String? {
        if block.steps.isEmpty { return "no `$ ` command in the block" }
        for (index, step) in block.steps.enumerated() {
            if step.command.isEmpty { return "output before any `$ ` command" }
            if step.command == "echo $?" { continue }
            let stages = step.command.components(separatedBy: " | ")
            let first = stages[0].split(separator: " ")
            guard first.first == "atsgate" else { return "`\(step.command)` is not an atsgate command" }
            // A daemon that serves never ends; one that cannot start does, and says so with `echo $?`.
            let exits = index + 1 < block.steps.count && block.steps[index + 1].command == "echo $?"
            if first.dropFirst().first == "run", !exits { return "`atsgate run` is a daemon: it does not end" }
            for stage in stages.dropFirst() {
                let name = String(stage.split(separator: " ").first ?? "")
                if !filters.contains(name) { return "`\(name)` is not a filter a transcript may pipe into" }
            }
        }
        return nil
    }

    /// Runs every block of `path` and describes each one whose output differs.
    static func failures(in path: String) throws -> [String] {
        let page = try ReferencePage(path)
        var failures: [String] = []
        for block in blocks(in: page) {
            let place = "\(block.file):\(block.line)"
            if let why = unrunnable(block) {
                failures.append("\(place): cannot run (\(why)); a block not meant to run uses ```sh or ```text")
                continue
            }
            let outputs = try run(block)
            for (step, output) in zip(block.steps, outputs) where !matches(step.output, output) {
                failures.append("\(place): $ \(step.command)\n--- the page says:\n\(step.output.joined(separator: "\n"))"
                                + "\n--- atsgate printed:\n\(output.joined(separator: "\n"))")
            }
            if outputs.count < block.steps.count {
                failures.append("\(place): the block ended early (\(outputs.count) of \(block.steps.count) commands ran)")
            }
        }
        return failures
    }

    /// The block's commands in one shell, in a network namespace of their own (loopback only: a
    /// transcript never reaches out), from a scratch directory that sees the repository's files.
    /// Returns each command's output (standard output and error, as a terminal shows them).
    static func run(_ block: ConsoleBlock) throws -> [[String]] {
        let scratch = try TemporaryDirectory()
        for entry in try FileManager.default.contentsOfDirectory(atPath: ReferencePage.root.path) where !entry.hasPrefix(".") {
            try FileManager.default.createSymbolicLink(at: scratch.url.appendingPathComponent(entry),
                                                       withDestinationURL: ReferencePage.root.appendingPathComponent(entry))
        }
        var script = "ip link set lo up 2>/dev/null\nexec 2>&1\ncd '\(scratch.url.path)'\n"
        for step in block.steps {
            script += "\(step.command)\n__status=$?; printf '\\036\\n'; (exit $__status)\n"
        }
        let bin = Atsgate.binary.deletingLastPathComponent().path
        let result = try Atsgate.run(["-n", "/bin/sh", "-c", script], timeout: 120,
                                     executable: URL(fileURLWithPath: "/usr/bin/unshare"),
                                     environment: ["PATH": "\(bin):/usr/local/bin:/usr/bin:/bin", "COLUMNS": "100"])
        var outputs: [[String]] = []
        var current: [String] = []
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "\u{1E}" {
                while current.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { current.removeLast() }
                outputs.append(current)
                current = []
            } else {
                current.append(String(line))
            }
        }
        return outputs
    }

    /// Whether `actual` is what `expected` shows: line by line, trailing spaces aside, with the
    /// placeholders of CONTRIBUTING.md.
    static func matches(_ expected: [String], _ actual: [String]) -> Bool {
        let expected = expected.map { $0.replacing(/\s+$/, with: "") }
        let actual = actual.map { $0.replacing(/\s+$/, with: "") }
        let patterns = expected.map { $0 == "..." ? nil : pattern($0) }
        // matched[i][j]: expected lines from i on match actual lines from j on.
        var matched = Array(repeating: Array(repeating: false, count: actual.count + 1), count: expected.count + 1)
        matched[expected.count][actual.count] = true
        for i in stride(from: expected.count - 1, through: 0, by: -1) {
            for j in stride(from: actual.count, through: 0, by: -1) {
                if let pattern = patterns[i] {
                    matched[i][j] = j < actual.count && actual[j].wholeMatch(of: pattern) != nil && matched[i + 1][j + 1]
                } else {
                    matched[i][j] = matched[i + 1][j] || (j < actual.count && matched[i][j + 1])
                }
            }
        }
        return matched[0][0]
    }

    static let placeholders: [String: String] = [
        "<TIME>": #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"#,
        "<PORT>": #"\d{1,5}"#,
        "<PID>": #"\d+"#,
        "<N>": #"-?\d+(\.\d+)?"#,
        "<ID>": #"[0-9A-Za-z_-]+"#,
        "<PATH>": #"\S+"#,
        "<VERSION>": #"\d[0-9A-Za-z.+-]*"#,
        "...": ".*",
    ]

    /// A line of the page as a regular expression: its text literally, its placeholders as patterns.
    static func pattern(_ line: String) -> Regex<AnyRegexOutput> {
        var regex = ""
        var rest = Substring(line)
        while !rest.isEmpty {
            if let (token, pattern) = placeholders.first(where: { rest.hasPrefix($0.key) }) {
                regex += "(?:\(pattern))"
                rest = rest.dropFirst(token.count)
            } else {
                let character = rest.removeFirst()
                regex += "\\^$.|?*+()[]{}/".contains(character) ? "\\\(character)" : String(character)
            }
        }
        return try! Regex(regex)
    }
}
