import Foundation
import Testing
import TestSupport

/// The parts of docs/reference/ that the binary knows: the config keys (the flags of `atsgate run`,
/// from its argument parser's own description), the metrics (scraped from a daemon on loopback)
/// and the commands with their exit codes.
@Suite(.serialized) struct ReferenceCLITests {
    /// `atsgate [COMMAND] --experimental-dump-help`: ArgumentParser's description of the command.
    private static func dumpHelp(_ command: [String]) throws -> [String: Any] {
        let run = try Atsgate.run(command + ["--experimental-dump-help"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        return try #require(json?["command"] as? [String: Any])
    }

    @Test func everyFlagOfRunIsAConfigKeyOnThePageWithItsDefaultAndRepeatability() throws {
        let arguments = try #require(try Self.dumpHelp(["run"])["arguments"] as? [[String: Any]])
        var flags: [String: [String: Any]] = [:]
        for argument in arguments {
            let names = argument["names"] as? [[String: Any]] ?? []
            guard let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                  long != "help", long != "version" else { continue }
            flags[long] = argument
        }
        let rows = try ReferencePage("docs/reference/config-keys.md").table("config-keys")
        let documented = Set(rows.map(\.name))
        #expect(Set(flags.keys).subtracting(documented).sorted() == [], "flags of atsgate run not in config-keys.md")
        #expect(documented.subtracting(flags.keys).sorted() == [], "config-keys.md rows that are no flag of atsgate run")
        for row in rows {
            guard let flag = flags[row.name] else { continue }
            #expect(row["flag"] == "`--\(row.name)`", "config-keys.md line \(row.line)")
            let repeating = flag["isRepeating"] as? Bool == true
            #expect(row["repeatable"] == (repeating ? "yes" : "no"), "config-keys.md line \(row.line): \(row.name)")
            if let value = flag["defaultValue"] as? String {
                #expect(row["default"] == "`\(value)`", "config-keys.md line \(row.line): the parser's default of \(row.name) is \(value)")
            }
        }
    }

    @Test func everyMetricFamilyIsOnThePageWithItsTypeAndLabels() throws {
        let daemon = try Daemon(["--admin", "127.0.0.1:0"])
        // One decision, so that the labelled families have a series whose labels can be read.
        let blocked = try Subprocess.curl(["-x", daemon.proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://api.example.com/"])
        #expect(blocked.stdout == "403")
        try daemon.waitForRecords(1)
        let text = try daemon.admin("/metrics")
        _ = try daemon.stop()

        var types: [String: String] = [:]
        var labels: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") {
            if let match = line.wholeMatch(of: /# TYPE (\S+) (\S+)/) {
                types[String(match.1)] = String(match.2)
            } else if !line.hasPrefix("#"), let match = line.firstMatch(of: /^([a-z_]+?)(_bucket|_sum|_count)?\{([^}]*)\}/) {
                let family = types[String(match.1)] != nil ? String(match.1) : String(match.1) + String(match.2 ?? "")
                let names = match.3.matches(of: /([a-z_]+)="/).map { String($0.1) }.filter { $0 != "le" }
                labels[family, default: []].formUnion(names)
            }
        }
        #expect(types.count > 20, "\(text)")
        let rows = try ReferencePage("docs/reference/metrics.md").table("metrics")
        let documented = Dictionary(rows.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(Set(types.keys).subtracting(documented.keys).sorted() == [], "families /metrics serves, not in metrics.md")
        #expect(Set(documented.keys).subtracting(types.keys).sorted() == [], "metrics.md rows /metrics does not serve")
        for (family, type) in types {
            guard let row = documented[family] else { continue }
            #expect(row["type"] == type, "metrics.md line \(row.line): \(family) is a \(type)")
            let listed = Set((row["labels"] ?? "").matches(of: /`([a-z_]+)`/).map { String($0.1) })
            let seen = labels[family] ?? []
            #expect(seen.isSubset(of: listed), "metrics.md line \(row.line): \(family) has labels \(seen.sorted())")
        }
        #expect(labels["atsgate_decisions_total"]?.contains("reason") == true, "no decision series in:\n\(text)")
    }

    @Test func everyCommandHasItsExitCodesOnThePageAndEveryCodeInItsSourceIsThere() throws {
        let subcommands = try #require(try Self.dumpHelp([])["subcommands"] as? [[String: Any]])
        let commands = Set(subcommands.compactMap { $0["commandName"] as? String }).subtracting(["help"])
        let rows = try ReferencePage("docs/reference/exit-codes.md").table("exit-codes")
        var codes: [String: Set<Int>] = [:]
        for row in rows { codes[row.name, default: []].insert(Int(row["status"] ?? "") ?? -1) }
        #expect(commands.subtracting(codes.keys).sorted() == [], "commands without exit codes in exit-codes.md")
        #expect(Set(codes.keys).subtracting(commands).sorted() == [], "exit-codes.md rows of no command")

        // A file named after its command (CheckCommand.swift) speaks for that command; the daemon's
        // files (Daemon, Service*) for run; any other file (Atsgate.swift's usage errors) for all.
        let sources = ReferencePage.root.appendingPathComponent("Sources/atsgate")
        let files = try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
            let owners: Set<String>
            if name.hasSuffix("Command"), commands.contains(name.dropLast(7).lowercased()) {
                owners = [name.dropLast(7).lowercased()]
            } else if name.hasPrefix("Daemon") || name.hasPrefix("Service") {
                owners = ["run"]
            } else {
                owners = commands
            }
            var found = Set(text.matches(of: /(?:ExitCode\(|exitCode: |exit\()(\d+)\)?/).compactMap { Int($0.1) })
            if text.contains("CommandFailure(message:") { found.insert(2) }
            for owner in owners {
                // `version` cannot fail, and Atsgate.swift's 2 is the usage error every other command has.
                if owner == "version" && owners.count > 1 { continue }
                let missing = found.subtracting(codes[owner] ?? [])
                #expect(missing.isEmpty, "Sources/atsgate/\(file) exits \(missing.sorted()) for \(owner); exit-codes.md has \((codes[owner] ?? []).sorted())")
            }
        }
    }
}
