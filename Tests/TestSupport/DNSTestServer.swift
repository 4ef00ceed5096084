import Foundation
import Glibc

/// The interpreter of the tests' Python fixtures itself, not a version manager's shim (a shim may
/// fork, and then stopping the child a test started would leave the fixture running).
public let pythonExecutable: String = {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
    let out = Pipe()
    probe.standardOutput = out
    probe.standardError = FileHandle.nullDevice
    guard (try? probe.run()) != nil else { return "/usr/bin/python3" }
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    probe.waitUntilExit()
    let path = text.trimmingCharacters(in: .whitespacesAndNewlines)
    return path.isEmpty ? "/usr/bin/python3" : path
}()

/// The path of a file in Tests/Fixtures.
public func fixturePath(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/" + name).path
}

/// The tests' own DNS server (Tests/Fixtures/dns_server.py) on a loopback port, UDP and TCP, answering
/// from a zone the test gives and may change while it runs (`setZone`). It logs every query it gets.
/// Stops with the test (its standard input closes).
public final class DNSTestServer: @unchecked Sendable {
    public let port: Int
    private let process = Process()
    private let input = Pipe()
    private let zonePath: String
    private let directory: URL
    private let log = OutputLog()
    private var output: Pipe?

    /// What the server printed. Read from its pipe without blocking whenever a test asks (the server
    /// prints a query before it answers it, so once an answer is in, so is its line) and by a
    /// background timer, so a long run never fills the pipe.
    private final class OutputLog: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        private var descriptor: Int32 = -1
        private var timer: DispatchSourceTimer?

        func start(reading fd: Int32) {
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            lock.withLock { descriptor = fd }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50))
            timer.setEventHandler { [weak self] in _ = self?.contents }
            timer.resume()
            self.timer = timer
        }

        /// After this no read touches the descriptor (it closes with the pipe, and its number may be reused).
        func stop() {
            timer?.cancel()
            lock.withLock { descriptor = -1 }
        }

        var contents: String {
            lock.withLock {
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while descriptor >= 0 {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count > 0 { text += String(decoding: buffer[..<count], as: UTF8.self); continue }
                    if count < 0, errno == EINTR { continue }
                    break
                }
                return text
            }
        }
    }

    /// `zone`: name (or `*.domain`) -> {"A": [...], "AAAA": [...], "ttl": N, "delay": S, "mode": ...}
    /// (see dns_server.py).
    public init(zone: [String: [String: Any]]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("atsgate-dns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        zonePath = directory.appendingPathComponent("zone.json").path
        try DNSTestServer.write(zone, to: zonePath)
        process.executableURL = URL(fileURLWithPath: pythonExecutable)
        process.arguments = [fixturePath("dns_server.py"), zonePath]
        process.standardInput = input
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        log.start(reading: out.fileHandleForReading.fileDescriptor)
        output = out
        let deadline = Date().addingTimeInterval(10)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            found = log.contents.firstMatch(of: /dns=(\d+)/).flatMap { Int($0.1) }
            if found == nil { usleep(20_000) }
        }
        guard let found else {
            process.terminate()
            throw HarnessError("the DNS test server did not start: \(log.contents)")
        }
        port = found
    }

    /// Replaces the zone; the server reads it again before its next answer.
    public func setZone(_ zone: [String: [String: Any]]) throws {
        try DNSTestServer.write(zone, to: zonePath)
    }

    /// `127.0.0.1:PORT`, for `--dns-server`.
    public var address: String { "127.0.0.1:\(port)" }

    /// Queries received so far for `name` (of `type`, "A" or "AAAA", when given; over `transport`,
    /// "udp" or "tcp", when given).
    public func queries(_ name: String, type: String? = nil, transport: String? = nil) -> Int {
        log.contents.split(separator: "\n").filter { line in
            let parts = line.split(separator: " ")
            return parts.count == 4 && parts[0] == "query" && parts[1] == name
                && (type == nil || parts[2] == type!) && (transport == nil || parts[3] == transport!)
        }.count
    }

    deinit {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        log.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private static func write(_ zone: [String: [String: Any]], to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: zone)
        // Written under another name and moved: the server never reads half a zone.
        let temporary = path + ".new"
        try data.write(to: URL(fileURLWithPath: temporary))
        _ = rename(temporary, path)
    }
}
