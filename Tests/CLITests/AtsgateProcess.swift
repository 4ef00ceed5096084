import Foundation
import Testing

/// Runs the real `atsgate` binary that `swift test` built, and captures what it printed.
struct AtsgateRun {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout split into JSON objects, one per non-empty line.
    func jsonLines() throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not a JSON object: \(line)")
        }
    }
}

enum Atsgate {
    /// The binary next to the test bundle (`.build/<triple>/debug/atsgate`), or `$ATSGATE_BIN`.
    static let binary: URL = {
        if let override = ProcessInfo.processInfo.environment["ATSGATE_BIN"] {
            return URL(fileURLWithPath: override)
        }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        // The xctest bundle may be a directory (…/atsgatePackageTests.xctest/…); walk up to the build dir.
        while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("atsgate").path),
              directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("atsgate")
    }()

    /// Runs `atsgate ARGS` with optional standard input; bounded by a timeout so a hang fails the test.
    /// `environment` adds to (or overrides) the test process's environment, e.g. SSL_CERT_FILE to point
    /// OpenSSL's system store at a test root.
    static func run(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 30,
                    executable: URL? = nil, environment: [String: String] = [:]) throws -> AtsgateRun {
        let process = Process()
        process.executableURL = executable ?? binary
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Drain both pipes concurrently so a large output cannot block the child.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw TimedOut(arguments: arguments)
        }
        process.waitUntilExit()
        return AtsgateRun(status: process.terminationStatus,
                          stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData, as: UTF8.self))
    }

    struct TimedOut: Error, CustomStringConvertible {
        var arguments: [String]
        var description: String { "atsgate \(arguments.joined(separator: " ")) did not finish in time" }
    }
}

/// A scratch directory for policy files, removed when the value goes away.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `contents` to `name` and returns its path.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        try write(name, Data(contents.utf8))
    }

    @discardableResult
    func write(_ name: String, _ contents: Data) throws -> String {
        let file = url.appendingPathComponent(name)
        try contents.write(to: file)
        return file.path
    }
}
