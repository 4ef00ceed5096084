import Foundation
import Glibc
import Testing
import TestSupport

/// A long-running child process whose output lines the test can wait for. Terminated on deinit.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var stdoutText = ""
    private var stderrText = ""
    private let input = Pipe()
    private let outputDone = DispatchGroup()

    /// `standardOutput`: where the child's stdout goes instead of `stdout` (a FIFO the test reads).
    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         standardOutput: FileHandle? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = standardOutput ?? out
        process.standardError = err
        process.standardInput = input
        for (pipe, isError) in standardOutput == nil ? [(out, false), (err, true)] : [(err, true)] {
            outputDone.enter()
            let done = outputDone
            // Leaves at the end even while deinit runs (self is already nil then), or stop() waits in vain.
            PipeDrain.start(pipe.fileHandleForReading, onData: { [weak self] data in
                guard let self else { return }
                self.lock.withLock {
                    if isError { self.stderrText += String(decoding: data, as: UTF8.self) }
                    else { self.stdoutText += String(decoding: data, as: UTF8.self) }
                }
            }, onEnd: { done.leave() })
        }
        try process.run()
    }

    /// Writes to the process's standard input (kept open until `stop`).
    func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    var stdout: String { lock.withLock { stdoutText } }
    var stderr: String { lock.withLock { stderrText } }

    /// Polls until `predicate` holds for (stdout, stderr) or the process exits; bounded in time.
    func wait(timeout: TimeInterval = 20, until predicate: (String, String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(stdout, stderr) { return }
            if !process.isRunning {
                if predicate(stdout, stderr) { return }
                throw HarnessError("\(process.executableURL!.lastPathComponent) exited: \(stderr)")
            }
            usleep(20_000)
        }
        throw HarnessError("timed out waiting for \(process.executableURL!.lastPathComponent); stderr: \(stderr)")
    }

    /// Waits until every writer of the output pipes has closed them (a daemon's successors after an
    /// upgrade hold them too); false when they are still open at the timeout.
    func waitForOutputEnd(timeout: TimeInterval = 20) -> Bool {
        outputDone.wait(timeout: .now() + timeout) == .success
    }

    /// SIGTERM, then waits for exit and for all output; returns the exit status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        _ = outputDone.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    deinit { stop(signal: SIGKILL) }
}

/// `atsgate run` on an ephemeral loopback port, with its decision log collected.
final class Daemon {
    let process: BackgroundProcess
    let port: Int

    /// `launcher`: a command the daemon runs under (e.g. `taskset -c 0`), its arguments first.
    convenience init(_ arguments: [String], launcher: [String] = [], standardOutput: FileHandle? = nil) throws {
        let command = launcher + [Atsgate.binary.path, "run", "--listen", "127.0.0.1:0"] + arguments
        try self.init(process: BackgroundProcess(command[0], Array(command.dropFirst()), standardOutput: standardOutput))
    }

    /// A daemon another program starts (`unshare ... atsgate run --listen 127.0.0.1:0 ...`).
    init(process: BackgroundProcess) throws {
        self.process = process
        try process.wait { _, err in err.contains("listening on ") }
        let line = process.stderr.split(separator: "\n").first { $0.contains("listening on ") } ?? ""
        guard let match = line.firstMatch(of: /listening on 127\.0\.0\.1:(\d+)/), let port = Int(match.1) else {
            throw HarnessError("no port in: \(line)")
        }
        self.port = port
    }

    /// A daemon another launcher started (inside a network namespace, say), listening on `port`.
    init(started process: BackgroundProcess, port: Int) throws {
        self.process = process
        self.port = port
        try process.wait { _, err in err.contains("listening on ") }
    }

    var proxy: String { "http://127.0.0.1:\(port)" }

    /// Stops the daemon (SIGTERM) once it has logged `expected` records (an exchange is logged when it
    /// ends, a moment after the client has its answer), and returns its exit status and log records
    /// (the run ledger's own records left out: they are no decisions; `ledger` has them).
    func stop(expected: Int = 1) throws -> (status: Int32, records: [[String: Any]]) {
        try waitForRecords(expected)
        let status = process.stop()
        let records = try process.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        return (status, records.filter { $0["ledger"] == nil })
    }

    /// The run ledger's records on standard output so far (`run-start`, `run-checkpoint`, `run-stop`).
    var ledger: [[String: Any]] {
        process.stdout.split(separator: "\n").filter { $0.contains(#""ledger":"#) }.compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    /// `stop`, with the records in time order (each event-loop queue writes its records in batches,
    /// so the log is in order only per queue).
    func stopInTimeOrder(expected: Int) throws -> [[String: Any]] {
        try stop(expected: expected).records.sorted { ($0["time"] as? String ?? "") < ($1["time"] as? String ?? "") }
    }

    /// A raw client whose CONNECT to 127.0.0.1:`port` the daemon answered with 200 (else throws).
    func openTunnel(to port: Int) throws -> RawClient {
        let client = try RawClient(port: self.port)
        client.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\n\r\n")
        let answer = client.read(until: "\r\n\r\n")
        guard answer.hasPrefix("HTTP/1.1 200 ") else { throw HarnessError("CONNECT answered: \(answer)") }
        return client
    }

    /// Waits until the log holds `count` decision records (they are written when an exchange ends).
    func waitForRecords(_ count: Int) throws {
        try process.wait { out, _ in out.split(separator: "\n").count { !$0.contains(#""ledger":"#) } >= count }
    }
}

/// The test origin of Tests/Fixtures/origin.py.
final class Origin {
    /// The interpreter itself (TestSupport's `pythonExecutable`).
    static let python = pythonExecutable

    let process: BackgroundProcess
    let httpPort: Int
    let eofPort: Int

    init() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/origin.py").path
        process = try BackgroundProcess(Origin.python, [script])
        try process.wait { out, _ in out.contains("eof=") }
        let match = process.stdout.firstMatch(of: /http=(\d+) eof=(\d+)/)!
        httpPort = Int(match.1)!
        eofPort = Int(match.2)!
    }
}

/// `openssl s_server` with a self-signed certificate for `tls.test`, on a free loopback port.
final class TLSOrigin {
    let process: BackgroundProcess
    let port: Int
    let directory: TemporaryDirectory

    init(extraArguments: [String] = []) throws {
        directory = try TemporaryDirectory()
        let (cert, key) = try Self.selfSigned(in: directory)
        port = try freePort()
        process = try BackgroundProcess("/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:\(port)",
            "-cert", cert, "-key", key, "-www", "-quiet"] + extraArguments)
        try waitUntilListening(port)
    }

    /// A self-signed RSA-2048 certificate for `tls.test`: cert.pem and key.pem in `directory`.
    static func selfSigned(in directory: TemporaryDirectory) throws -> (certificate: String, key: String) {
        let key = directory.url.appendingPathComponent("key.pem").path
        let cert = directory.url.appendingPathComponent("cert.pem").path
        let made = try Subprocess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=tls.test",
            "-addext", "subjectAltName=DNS:tls.test"])
        guard made.status == 0 else { throw HarnessError("openssl req: \(made.stderr)") }
        return (cert, key)
    }
}

enum Subprocess {
    /// Runs a program to completion with a timeout and returns its status and output.
    static func run(_ executable: String, _ arguments: [String], stdin: String? = nil,
                    timeout: TimeInterval = 30) throws -> AtsgateRun {
        try Atsgate.run(arguments, stdin: stdin, timeout: timeout, executable: URL(fileURLWithPath: executable))
    }

    static func curl(_ arguments: [String]) throws -> AtsgateRun {
        try run("/usr/bin/curl", ["--silent", "--show-error", "--max-time", "10"] + arguments)
    }
}
