import Foundation
import Glibc
import Synchronization

/// A process the soak started (the daemon, nginx, openssl, curl), its output in files; every one
/// is stopped when the soak ends, however it ends.
final class Child: @unchecked Sendable {
    let process = Process()
    let name: String

    /// Starts `executable` (a path, or a name looked up in PATH) with stdout and stderr to files.
    init(_ executable: String, _ arguments: [String], stdout: String? = nil, stderr: String? = nil,
         directory: String? = nil) throws {
        name = (executable as NSString).lastPathComponent
        guard let path = Child.find(executable) else { throw SoakError("command not found: \(executable)") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try Child.handle(stdout)
        process.standardError = try Child.handle(stderr)
        try process.run()
        Child.registry.withLock { $0.append(self) }
    }

    var pid: pid_t { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    func signal(_ number: Int32) { if process.isRunning { kill(pid, number) } }

    /// SIGTERM, up to `grace` seconds, then SIGKILL.
    func stop(grace: Double = 5) {
        signal(SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Runs a command to its end (killed after `timeout`); its status and output.
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 60,
                    directory: String? = nil) -> (status: Int32, stdout: String, stderr: String) {
        let scratch = NSTemporaryDirectory() + "soak-run-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: scratch + ".out")
            try? FileManager.default.removeItem(atPath: scratch + ".err")
        }
        guard let child = try? Child(executable, arguments, stdout: scratch + ".out", stderr: scratch + ".err",
                                     directory: directory) else { return (-1, "", "cannot start \(executable)") }
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning, Date() < deadline { usleep(10_000) }
        if child.isRunning { child.stop(grace: 1) }
        child.process.waitUntilExit()
        child.forget()
        return (child.process.terminationStatus, readText(scratch + ".out"), readText(scratch + ".err"))
    }

    private func forget() { Child.registry.withLock { $0.removeAll { $0 === self } } }

    private static let registry = Mutex<[Child]>([])

    /// Stops every process still running (at the end, or on SIGINT/SIGTERM of the soak).
    static func stopAll() {
        for child in registry.withLock({ $0 }) where child.isRunning { child.stop(grace: 2) }
    }

    static func find(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func handle(_ path: String?) throws -> FileHandle {
        guard let path else { return FileHandle.nullDevice }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw SoakError("cannot write \(path)") }
        return handle
    }
}

func readText(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

/// Progress on stderr, prefixed with `#`; the table and the verdict go to stdout.
func say(_ line: String) {
    FileHandle.standardError.write(Data(("# " + line + "\n").utf8))
}
