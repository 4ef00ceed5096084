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

    /// What the server printed, filled from its pipe on another thread.
    private final class OutputLog: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func append(_ data: Data) { lock.withLock { text += String(decoding: data, as: UTF8.self) } }
        var contents: String { lock.withLock { text } }
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
        let log = self.log
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil; return }
            log.append(data)
        }
        try process.run()
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
