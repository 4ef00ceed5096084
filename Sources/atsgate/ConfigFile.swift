import ArgumentParser
import ATSLint
import ATSPolicy
import Foundation

/// The daemon's config file: one `key = value` per line, where each key is a long flag of
/// `atsgate run` without its dashes (so the file and the flags cannot drift apart). Repeatable flags
/// may appear on several lines; `#` starts a comment. Flags on the command line override the file,
/// and a repeatable flag given there replaces all of the file's values for it.
enum ConfigFile {
    /// The keys of repeatable flags, and of flags that take no value (`key = true`). Both are read off
    /// `run`'s option groups, so that a flag added to a group needs no line here.
    static let repeatable = runKeys { $0["isRepeating"] as? Bool == true }
    static let booleans = runKeys { $0["kind"] as? String == "flag" }

    /// `run` arguments with the file named by `--config` folded in before the command line's own.
    static func expand(_ arguments: [String]) throws -> [String] {
        guard arguments.first == "run", let path = configPath(arguments) else { return arguments }
        let fileArguments = try read(path)
        // Check the file alone first, so a bad value is reported against the file, not the flags.
        do {
            _ = try RunCommand.parse(fileArguments)
        } catch {
            throw CommandFailure(message: "\(path): \(RunCommand.message(for: error))")
        }
        let given = Set(arguments.compactMap { argument -> String? in
            guard argument.hasPrefix("--") else { return nil }
            return String(argument.dropFirst(2).prefix { $0 != "=" })
        })
        var kept: [String] = []
        var index = 0
        while index < fileArguments.count {
            let key = String(fileArguments[index].dropFirst(2))
            let width = booleans.contains(key) ? 1 : 2
            if !(repeatable.contains(key) && given.contains(key)) {
                kept += fileArguments[index..<(index + width)]
            }
            index += width
        }
        return ["run"] + kept + arguments.dropFirst()
    }

    private static func configPath(_ arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return nil
    }

    /// The file as flags, with errors that name the file, the line and the key.
    static func read(_ path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw CommandFailure(message: "\(path): \(exists ? "cannot read" : "no such file")")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CommandFailure(message: "\(path): not UTF-8 text")
        }
        let known = knownKeys
        var arguments: [String] = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            let place = "\(path):\(number + 1)"
            guard let equals = line.firstIndex(of: "=") else {
                throw CommandFailure(message: "\(place): expected 'key = value'")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard known.contains(key) else {
                let hint = known.min { KeySpelling.distance($0, key) < KeySpelling.distance($1, key) }.map { " (did you mean '\($0)'?)" } ?? ""
                throw CommandFailure(message: "\(place): unknown key '\(key)'\(hint)")
            }
            if key == "config" { throw CommandFailure(message: "\(place): a config file cannot name another") }
            if booleans.contains(key) {
                switch value {
                case "true", "yes": arguments.append("--\(key)")
                case "false", "no": break
                default: throw CommandFailure(message: "\(place): \(key) takes true or false, not '\(value)'")
                }
                continue
            }
            guard !value.isEmpty else { throw CommandFailure(message: "\(place): \(key) has no value") }
            do {
                _ = try RunCommand.parse(["--\(key)", value])
            } catch {
                throw CommandFailure(message: "\(place): \(RunCommand.message(for: error))")
            }
            arguments += ["--\(key)", value]
        }
        return arguments
    }

    /// The long names of `run`'s options that `matches` picks, from ArgumentParser's description of
    /// the command (what `--experimental-dump-help` prints).
    private static func runKeys(where matches: ([String: Any]) -> Bool) -> Set<String> {
        let json = try? JSONSerialization.jsonObject(with: Data(RunCommand._dumpHelp().utf8))
        let command = (json as? [String: Any])?["command"] as? [String: Any]
        let arguments = command?["arguments"] as? [[String: Any]] ?? []
        let names = arguments.filter(matches).compactMap { argument in
            (argument["names"] as? [[String: Any]])?.first { $0["kind"] as? String == "long" }?["name"] as? String
        }
        return Set(names).subtracting(["help", "version"])
    }

    /// The long option names `atsgate run` takes.
    static var knownKeys: [String] {
        RunCommand.helpMessage(columns: 1000).split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^\s+--([a-z][a-z0-9-]*)/).map { String($0.1) }
        }.filter { $0 != "help" && $0 != "version" }
    }
}
