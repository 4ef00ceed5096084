import Foundation
import Glibc

/// A process the benchmark started; every one is stopped when the benchmark exits, however it exits.
final class Spawned: @unchecked Sendable {
    let name: String
    let process: Process
    /// Where its stderr goes (read when it dies).
    let stderrPath: String

    init(name: String, process: Process, stderrPath: String) {
        self.name = name
        self.process = process
        self.stderrPath = stderrPath
    }

    var pid: pid_t { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// "with status 1" or "on signal SEGV", once it has exited.
    var exitDescription: String {
        if process.terminationReason == .uncaughtSignal {
            let number = process.terminationStatus
            return "on signal \(signalName(number))"
        }
        return "with status \(process.terminationStatus)"
    }

    /// TERM, up to 5 s to go, then KILL for it and its children (tinyproxy serves from children).
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        for _ in 0..<50 where process.isRunning { usleep(100_000) }
        if process.isRunning {
            for child in ProcFS.children(of: pid) { kill(child, SIGKILL) }
            kill(pid, SIGKILL)
        }
        process.waitUntilExit()
    }
}

private func signalName(_ number: Int32) -> String {
    let names: [Int32: String] = [
        SIGHUP: "HUP", SIGINT: "INT", SIGQUIT: "QUIT", SIGILL: "ILL", SIGTRAP: "TRAP", SIGABRT: "ABRT",
        SIGBUS: "BUS", SIGFPE: "FPE", SIGKILL: "KILL", SIGSEGV: "SEGV", SIGPIPE: "PIPE", SIGTERM: "TERM",
    ]
    return names[number] ?? "\(number)"
}

/// The processes started so far, stopped in reverse order at exit (a signal included), and the
/// run's temporary directory, removed then.
final class ProcessRegistry: @unchecked Sendable {
    static let shared = ProcessRegistry()
    private let lock = NSLock()
    private var processes: [Spawned] = []
    private var directories: [String] = []

    func add(_ spawned: Spawned) { lock.withLock { processes.append(spawned) } }
    func removeAtExit(_ directory: String) { lock.withLock { directories.append(directory) } }

    func stopAll() {
        let (all, dirs) = lock.withLock {
            defer { processes = []; directories = [] }
            return (processes, directories)
        }
        for spawned in all.reversed() { spawned.stop() }
        for dir in dirs { try? FileManager.default.removeItem(atPath: dir) }
    }

    /// Ctrl-C and TERM stop everything and exit 130 / 143, as the shell script did. The handler only
    /// writes the signal's number to a pipe; a thread reads it and does the work. A handler (unlike a
    /// blocked mask) is not inherited by the processes started: they get the default back at exec.
    /// A signal ignored when the benchmark started (INT in a background job) stays ignored.
    func stopOnSignals() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        signalWriteFD = fds[1]
        for number in [SIGINT, SIGTERM] {
            var old = sigaction()
            sigaction(number, nil, &old)
            if let handler = old.__sigaction_handler.sa_handler, unsafeBitCast(handler, to: Int.self) == 1 { continue } // SIG_IGN
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalWriteFD, &byte, 1)
            }
            sigaction(number, &action, nil)
        }
        let readFD = fds[0]
        let thread = Thread {
            var byte: UInt8 = 0
            guard read(readFD, &byte, 1) == 1 else { return }
            FileHandle.standardError.write(Data("# stopping on signal \(byte)\n".utf8))
            ProcessRegistry.shared.stopAll()
            exit(Int32(byte) == SIGINT ? 130 : 143)
        }
        thread.start()
    }
}

/// Where the signal handler writes (a handler can only reach globals).
nonisolated(unsafe) private var signalWriteFD: Int32 = -1

enum Command {
    /// The directories searched for commands: the caller's PATH and the sbin directories where
    /// Debian puts nginx, squid and privoxy.
    static let searchPath: [String] = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/sbin"]
    }()

    static func find(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in searchPath where FileManager.default.isExecutableFile(atPath: dir + "/" + name) {
            return dir + "/" + name
        }
        return nil
    }

    /// Starts a command in the background, stdout and stderr to files (or /dev/null).
    static func start(
        _ name: String, _ arguments: [String], stdout: String? = nil, stderr: String? = nil,
        directory: String? = nil, environment: [String: String]? = nil
    ) throws -> Spawned {
        guard let executable = find(name) else { throw BenchmarkError("command not found: \(name)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try handle(writingTo: stdout)
        process.standardError = try handle(writingTo: stderr)
        try process.run()
        let spawned = Spawned(name: name, process: process, stderrPath: stderr ?? "/dev/null")
        ProcessRegistry.shared.add(spawned)
        return spawned
    }

    /// Runs a command to its end (or kills it after `timeout` seconds) and returns its stdout and
    /// stderr; a command that cannot be started returns nil.
    static func run(
        _ name: String, _ arguments: [String], timeout: Double = 600, directory: String? = nil,
        scratch: String
    ) -> (status: Int32, stdout: String, stderr: String)? {
        let out = scratch + ".out", err = scratch + ".err"
        guard let spawned = try? start(name, arguments, stdout: out, stderr: err, directory: directory) else {
            return nil
        }
        let deadline = Date().addingTimeInterval(timeout)
        while spawned.isRunning && Date() < deadline { usleep(20_000) }
        if spawned.isRunning { spawned.stop() }
        spawned.process.waitUntilExit()
        return (spawned.process.terminationStatus, readText(out), readText(err))
    }

    private static func handle(writingTo path: String?) throws -> FileHandle {
        guard let path, path != "/dev/null" else { return FileHandle.nullDevice }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchmarkError("cannot write \(path)")
        }
        return handle
    }
}

/// What went wrong, said to the user as it is.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func readText(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}

/// Progress goes to stderr with a `#` prefix; the table goes to stdout.
func say(_ line: String) {
    FileHandle.standardError.write(Data(("# " + line + "\n").utf8))
}
