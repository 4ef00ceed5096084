import Foundation
import Glibc
import Testing
import TestSupport

/// The decision log under pressure, with the real daemon: a FIFO whose reader stops, a file on a
/// tmpfs that fills up, a file logrotate moves away, and a journald socket nobody reads. Requests
/// are blocked cleartext (the proxy answers 403 itself, one record each); the assertions are about
/// answers, records and counts, never about time (waits are bounded, generously).
@Suite(.serialized) struct DecisionLogPressureTests {
    static let requests = 300

    // MARK: a reader that stops

    @Test func dropAnswersEveryRequestWhileTheLogsReaderStallsAndCountsWhatItDropped() throws {
        let fifo = try Fifo()
        let daemon = try Daemon(["--admin", "127.0.0.1:0", "--log-buffer", "16K"], standardOutput: fifo.writer)
        fifo.closeWriter()
        let admin = try daemon.adminPort()
        // Nobody reads the FIFO: its 4 KiB and the log's 16 KiB fill after a few dozen records.
        let answers = try (0..<Self.requests).map { try blockedRequest($0, port: daemon.port) }
        #expect(answers.allSatisfy { $0 == "HTTP/1.1 403" }, "\(Set(answers))")
        let dropped = try waitForMetric("atsgate_log_dropped_records_total", admin: admin) { $0 > 0 }
        #expect(dropped > 0)
        let health = try adminGet(admin, "/healthz")
        #expect(health.status == 200 && health.body.contains("records dropped"), "\(health)")
        #expect(try adminGet(admin, "/readyz").status == 200, "drop never holds the proxy back")
        // The warning (at most one a second) names the count and the cause.
        try daemon.process.wait { _, err in err.contains("records dropped (") }
        #expect(daemon.process.stderr.contains("its buffer (16 KiB, --log-buffer) was full"), "\(daemon.process.stderr)")

        let output = fifo.readToEndInBackground()
        #expect(daemon.process.stop() == 0)
        let lines = try #require(output.wait(), "the log's reader got to the end")
        let log = try DecisionLogLines(lines)
        #expect(log.records.count + log.dropped == Self.requests, "records read plus dropped equal requests")
        #expect(log.dropped >= dropped)
        #expect(log.last?["reason"] as? String == "log-overflow", "the last record counts the losses")
        #expect(log.last?["dropped_total"] as? Int == log.dropped)
        let stop = try #require(log.ledger.last, "the run's ledger")
        #expect(stop["ledger"] as? String == "run-stop" && stop["dropped"] as? Int == log.dropped,
                "the run-stop comes after the overflow record and counts the same losses: \(stop)")
        #expect(stop["records"] as? Int == log.records.count, "and the decision records written")
        #expect(daemon.process.stderr.contains("records were dropped since the start"), "\(daemon.process.stderr)")
    }

    @Test func pauseKeepsEveryRecordAndServesAgainWhenTheReaderResumes() throws {
        let origin = try Origin()
        let fifo = try Fifo()
        let daemon = try Daemon(["--admin", "127.0.0.1:0", "--log-buffer", "16K", "--log-overflow", "pause",
                                 "--connect-port", "\(origin.httpPort)"], standardOutput: fifo.writer)
        fifo.closeWriter()
        let admin = try daemon.adminPort()
        let small = String(repeating: "a", count: 100)
        let tunnel = try daemon.openTunnel(to: origin.httpPort)
        tunnel.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnel.read(until: small).hasSuffix(small))

        let count = 150
        let answers = Answers()
        let port = daemon.port
        Thread.detachNewThread {
            for number in 0..<count { answers.add((try? blockedRequest(number, port: port, timeout: 120)) ?? "failed") }
        }
        let paused = try waitForAdmin(admin, "/readyz") { $0.status == 503 }
        #expect(paused.body.contains("--log-overflow pause"), "/readyz says why: \(paused)")
        let health = try adminGet(admin, "/healthz")
        #expect(health.status == 200 && health.body.contains("decision log full"), "\(health)")
        #expect(answers.count < count, "requests wait while the log is full")
        tunnel.send("GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnel.read(until: small).hasSuffix(small), "an open tunnel keeps relaying")

        let output = fifo.readToEndInBackground()
        let deadline = Date().addingTimeInterval(120)
        while answers.count < count, Date() < deadline { usleep(50_000) }
        #expect(answers.values == Array(repeating: "HTTP/1.1 403", count: count), "served again once the log drained")
        #expect(try waitForAdmin(admin, "/readyz") { $0.status == 200 }.body == "ready\n")
        tunnel.close()
        #expect(daemon.process.stop() == 0)
        let log = try DecisionLogLines(try #require(output.wait()))
        let hosts = log.records.compactMap { $0["host"] as? String }.filter { $0.hasSuffix(".example") }
        #expect(hosts.sorted() == (0..<count).map { "r\($0).example" }.sorted(), "every record kept, once")
        #expect(log.dropped == 0 && log.overflowRecords == 0)
    }

    /// SIGTERM with a reader that never comes back: the log gets what remains of the grace period,
    /// then the daemon exits 0 by itself and says how many records it could not write.
    @Test func aStopDoesNotWaitForAReaderThatNeverReturns() throws {
        let fifo = try Fifo()
        let daemon = try Daemon(["--grace-period", "1", "--log-buffer", "16K", "--log-overflow", "pause",
                                 "--admin", "127.0.0.1:0"], standardOutput: fifo.writer)
        fifo.closeWriter()
        let port = daemon.port
        Thread.detachNewThread {
            for number in 0..<100 { _ = try? blockedRequest(number, port: port, timeout: 20) }
        }
        _ = try waitForAdmin(try daemon.adminPort(), "/readyz") { $0.status == 503 } // full: records are held
        // BackgroundProcess.stop waits 10 s before SIGKILL, which would not be exit status 0.
        #expect(daemon.process.stop() == 0, "exited by itself: \(daemon.process.stderr)")
        #expect(daemon.process.stderr.contains("decision records were not written: the log did not drain within "
                                               + "the grace period"), "\(daemon.process.stderr)")
    }

    // MARK: a file

    /// A tmpfs of 1 MiB in a mount namespace of the daemon's own, filled by the test through
    /// /proc/PID/root (the daemon's view of the mount), then emptied again.
    @Test(.enabled(if: MountNamespace.available, "needs root and unshare -m (mount namespaces)"))
    func aFullFileSystemDropsCountedRecordsAndWritingResumesWhenSpaceReturns() throws {
        let mountPoint = try TemporaryDirectory()
        let script = "mount -t tmpfs -o size=1m atsgate-test \"$0\" && exec \"$1\" run --listen 127.0.0.1:0 "
            + "--admin 127.0.0.1:0 --log-file \"$0\"/decisions.log"
        let daemon = try Daemon(process: BackgroundProcess(MountNamespace.unshare, [
            "-m", "--propagation", "private", "sh", "-c", script, mountPoint.url.path, Atsgate.binary.path]))
        let admin = try daemon.adminPort()
        let inside = "/proc/\(daemon.process.process.processIdentifier)/root\(mountPoint.url.path)"
        let logPath = inside + "/decisions.log"

        for number in 0..<10 { #expect(try blockedRequest(number, port: daemon.port) == "HTTP/1.1 403") }
        try waitUntil("10 records in the file") { (try? DecisionLogLines(contentsOf: logPath))?.records.count == 10 }
        try fill(inside + "/filler")

        let answers = try (10..<110).map { try blockedRequest($0, port: daemon.port) }
        #expect(answers.allSatisfy { $0 == "HTTP/1.1 403" }, "nothing stalls: \(Set(answers))")
        try waitUntil("each record written or counted as dropped") {
            let written = (try? DecisionLogLines(contentsOf: logPath))?.records.count ?? 0
            return written + ((try? metric("atsgate_log_dropped_records_total", admin: admin)) ?? 0) == 110
        }
        #expect(try metric("atsgate_log_dropped_records_total", admin: admin) > 0, "the disk was full")
        let health = try adminGet(admin, "/healthz")
        #expect(health.status == 200 && health.body.contains("No space left on device"), "\(health)")

        #expect(unlink(inside + "/filler") == 0)
        for number in 110..<120 { #expect(try blockedRequest(number, port: daemon.port) == "HTTP/1.1 403") }
        try waitUntil("writing resumed, with the overflow record") {
            guard let log = try? DecisionLogLines(contentsOf: logPath) else { return false }
            return log.overflowRecords > 0 && log.records.count + log.dropped == 120
        }
        let log = try DecisionLogLines(contentsOf: logPath) // every line parses: no torn line was left
        let hosts = Set(log.records.compactMap { $0["host"] as? String })
        for number in 110..<120 { #expect(hosts.contains("r\(number).example"), "record \(number) written after") }
        #expect(daemon.process.stop() == 0)
    }

    @Test func sigusr1ReopensTheLogFileAndNoRecordIsLostBetweenTheTwo() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let daemon = try Daemon(["--log-file", path])
        let pid = daemon.process.process.processIdentifier
        for number in 0..<20 { _ = try blockedRequest(number, port: daemon.port) }
        try waitUntil("20 records") { (try? DecisionLogLines(contentsOf: path))?.records.count == 20 }
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1") // what logrotate does first
        for number in 20..<40 { _ = try blockedRequest(number, port: daemon.port) }
        try waitUntil("40 records in the moved file") { (try? DecisionLogLines(contentsOf: path + ".1"))?.records.count == 40 }
        kill(pid, SIGUSR1)
        try waitUntil("the file opened again") { FileManager.default.fileExists(atPath: path) }
        for number in 40..<60 { _ = try blockedRequest(number, port: daemon.port) }
        #expect(daemon.process.stop() == 0)

        func hosts(_ file: String) throws -> [String] {
            try DecisionLogLines(contentsOf: file).records.compactMap { $0["host"] as? String }
        }
        #expect(Set(try hosts(path + ".1")) == Set((0..<40).map { "r\($0).example" }), "before the signal: the moved file")
        #expect(try hosts(path + ".1").count == 40, "once each")
        #expect(Set(try hosts(path)) == Set((40..<60).map { "r\($0).example" }), "records continue in the new file")
        #expect(try hosts(path).count == 20, "once each")
    }

    @Test func aLogFileThatCannotBeOpenedStopsTheStartWithItsName() throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--log-file", "/nonexistent/atsgate/decisions.log"],
                                  timeout: 10)
        #expect(run.status == 2, "a start-up failure")
        #expect(run.stderr == "atsgate: --log-file: cannot open the decision log: open /nonexistent/atsgate/decisions.log: "
                + "No such file or directory\n", "\(run.stderr)")
    }

    @Test(arguments: [
        (["--log-buffer", "100"], "--log-buffer 100: at least 4096 bytes"),
        (["--log-buffer", "lots"], "--log-buffer"),
        (["--log-overflow", "sometimes"], "--log-overflow"),
        (["--log-format", "journal", "--log-file", "/tmp/x.log"], "--log-file takes json or text records"),
    ])
    func badLogFlagsAreRefused(arguments: [String], expected: String) throws {
        let run = try Atsgate.run(["run", "--listen", "127.0.0.1:0"] + arguments, timeout: 10)
        #expect(run.status == 2)
        #expect(run.stderr.contains(expected), "\(run.stderr)")
    }

    @Test func theConfigFileTakesTheLogKeys() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("decisions.log").path
        let config = try directory.write("atsgate.conf", """
            log-file = \(path)
            log-overflow = pause
            log-buffer = 64K
            log-format = text
            """)
        let daemon = try Daemon(["--config", config])
        #expect(try blockedRequest(7, port: daemon.port) == "HTTP/1.1 403")
        #expect(daemon.process.stop() == 0)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("http://r7.example:80 BLOCK cleartext-http"), "\(text)")

        let broken = try directory.write("broken.conf", "log-overflow = sometimes\n")
        let run = try Atsgate.run(["run", "--config", broken], timeout: 10)
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("atsgate: \(broken):1: "), "\(run.stderr)")
    }

    // MARK: journald

    /// journald's socket, as far as a test can make one: a datagram socket nobody reads, bind-mounted
    /// on /run/systemd/journal in the daemon's mount namespace (libsystemd names that path itself).
    @Test(.enabled(if: MountNamespace.available, "needs root and unshare -m (mount namespaces)"))
    func aStalledJournalDelaysNoRequestAndEveryLostEntryIsCounted() throws {
        let directory = try TemporaryDirectory()
        let journald = try JournalSocket(path: directory.url.appendingPathComponent("socket").path)
        let script = "mount -t tmpfs atsgate-run /run && mkdir -p /run/systemd/journal && "
            + "mount --bind \"$0\" /run/systemd/journal && exec \"$1\" run --listen 127.0.0.1:0 --admin 127.0.0.1:0 "
            + "--log-format journal --log-buffer 16K"
        let daemon = try Daemon(process: BackgroundProcess(MountNamespace.unshare, [
            "-m", "--propagation", "private", "sh", "-c", script, directory.url.path, Atsgate.binary.path]))
        let admin = try daemon.adminPort()
        let count = 200
        let answers = try (0..<count).map { try blockedRequest($0, port: daemon.port) }
        #expect(answers.allSatisfy { $0 == "HTTP/1.1 403" }, "\(Set(answers))")
        #expect(try adminGet(admin, "/healthz").status == 200)
        #expect(try waitForMetric("atsgate_log_dropped_records_total", admin: admin) { $0 > 0 } > 0)

        // journald reads again: every entry arrives, the overflow entry counts the rest.
        var decisions = 0
        var dropped = 0
        let deadline = Date().addingTimeInterval(60)
        while decisions + dropped < count, Date() < deadline {
            guard let entry = journald.receive() else { continue }
            if entry["ATS_REASON"] == "log-overflow" {
                dropped += Int(entry["ATS_DROPPED"] ?? "") ?? 0
                #expect(entry["PRIORITY"] == "4" && entry["ATS_ACTION"] == "error")
            } else if entry["ATS_ACTION"] != nil {
                decisions += 1
            }
        }
        #expect(decisions + dropped == count, "entries received plus dropped equal requests")
        #expect(dropped > 0)
        #expect(daemon.process.stop() == 0)
    }

    // MARK: helpers

    /// A blocked cleartext request (403 from the proxy itself): the first 12 bytes of the answer.
    private func blockedRequest(_ number: Int, port: Int, timeout: Int = 30) throws -> String {
        let client = try RawClient(port: port, timeout: timeout)
        client.send("GET http://r\(number).example/ HTTP/1.1\r\nHost: r\(number).example\r\nConnection: close\r\n\r\n")
        return String(client.readAll().prefix(12))
    }

    private func adminGet(_ port: Int, _ path: String) throws -> (status: Int, body: String) {
        let client = try RawClient(port: port, timeout: 30)
        client.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = client.readAll()
        guard let status = answer.firstMatch(of: #/^HTTP/1\.1 (\d{3}) /#).flatMap({ Int($0.1) }),
              let end = answer.range(of: "\r\n\r\n") else { throw HarnessError("admin \(path) answered: \(answer)") }
        return (status, String(answer[end.upperBound...]))
    }

    private func waitForAdmin(_ port: Int, _ path: String,
                              until predicate: ((status: Int, body: String)) -> Bool) throws -> (status: Int, body: String) {
        var last = (status: 0, body: "")
        try waitUntil("\(path) as expected") {
            last = try adminGet(port, path)
            return predicate(last)
        }
        return last
    }

    private func metric(_ name: String, admin: Int) throws -> Int {
        let text = try adminGet(admin, "/metrics").body
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }),
              let value = Int(line.dropFirst(name.count + 1)) else { throw HarnessError("no \(name) in /metrics") }
        return value
    }

    private func waitForMetric(_ name: String, admin: Int, until predicate: (Int) -> Bool) throws -> Int {
        var value = 0
        try waitUntil("\(name) as expected") {
            value = try metric(name, admin: admin)
            return predicate(value)
        }
        return value
    }

    /// Polls `condition` (bounded: a minute) until it holds.
    private func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        throw HarnessError("timed out waiting for \(what)")
    }

    /// Writes to `path` until the file system is full (bounded by its 1 MiB).
    private func fill(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HarnessError("open \(path): \(errno)") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x78, count: 65536)
        for _ in 0..<64 where write(fd, chunk, chunk.count) > 0 {}
        guard write(fd, chunk, 1) < 0, errno == ENOSPC else { throw HarnessError("the tmpfs did not fill up") }
    }
}

/// JSON lines of a decision log: the decision records, what the `log-overflow` records count, and
/// the run ledger's records (no decisions).
struct DecisionLogLines {
    var records: [[String: Any]] = []
    var dropped = 0
    var overflowRecords = 0
    var ledger: [[String: Any]] = []
    /// The last record that is not the ledger's.
    var last: [String: Any]?

    init(contentsOf path: String) throws {
        try self.init(String(contentsOfFile: path, encoding: .utf8))
    }

    /// Every line must be a JSON object (a torn line fails).
    init(_ text: String) throws {
        for line in text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            if object["ledger"] != nil {
                ledger.append(object)
                continue
            }
            last = object
            if object["reason"] as? String == "log-overflow" {
                dropped += object["dropped"] as? Int ?? 0
                overflowRecords += 1
            } else {
                records.append(object)
            }
        }
    }
}

/// A FIFO for the daemon's standard output, its pipe shrunk to one page so it fills at once; the
/// test reads it, or does not.
private final class Fifo: @unchecked Sendable {
    private let directory: TemporaryDirectory
    private let reader: Int32
    let writer: FileHandle

    init() throws {
        directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("log.fifo").path
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError("mkfifo: \(errno)") }
        reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard reader >= 0, fd >= 0 else { throw HarnessError("open the FIFO: \(errno)") }
        _ = fcntl(fd, 1031 /* F_SETPIPE_SZ */, 4096)
        writer = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// The daemon has its copy: the end of the log is when the daemon's closes.
    func closeWriter() { try? writer.close() }

    /// Reads until every writer is gone, on a thread of its own; `wait()` gives the text.
    func readToEndInBackground() -> Output {
        let output = Output()
        Thread.detachNewThread { [self] in
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                let n = read(reader, &buffer, buffer.count)
                if n > 0 { bytes += buffer[..<n]; continue }
                if n == 0 { return output.finish(String(decoding: bytes, as: UTF8.self)) }
                var entry = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, 1000)
            }
            output.finish(nil)
        }
        return output
    }

    deinit { close(reader) }

    final class Output: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var text: String?

        func finish(_ text: String?) {
            self.text = text
            done.signal()
        }

        func wait() -> String? {
            _ = done.wait(timeout: .now() + 150)
            return text
        }
    }
}

/// Answers a background client got, in order.
private final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    func add(_ answer: String) { lock.withLock { kept.append(answer) } }
    var values: [String] { lock.withLock { kept } }
    var count: Int { values.count }
}

/// Mount namespaces through util-linux's unshare (root only).
enum MountNamespace {
    static let unshare = "/usr/bin/unshare"

    static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: unshare) else { return false }
        return (try? Subprocess.run(unshare, ["-m", "--propagation", "private", "true"], timeout: 10))?.status == 0
    }()
}

/// A stand-in for journald's socket: entries in the native protocol, received when the test asks.
final class JournalSocket {
    private let fd: Int32
    private let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind \(path): \(errno)") }
        var limit = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next entry's fields (nil after a second with none). A value holding a newline comes as
    /// NAME, newline, its length (64-bit little-endian), the bytes, newline.
    func receive() -> [String: String]? {
        var buffer = [UInt8](repeating: 0, count: 1 << 17)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return nil }
        let bytes = buffer[..<n]
        var fields: [String: String] = [:]
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let end = bytes[index...].firstIndex(of: 0x0A) ?? bytes.endIndex
            let line = bytes[index..<end]
            if let equals = line.firstIndex(of: UInt8(ascii: "=")) {
                fields[String(decoding: line[..<equals], as: UTF8.self)] = String(decoding: line[(equals + 1)...], as: UTF8.self)
                index = end + 1
            } else {
                let lengthStart = end + 1
                guard lengthStart + 8 <= bytes.endIndex else { break }
                let length = bytes[lengthStart..<(lengthStart + 8)].reversed().reduce(0) { $0 << 8 | Int($1) }
                let valueStart = lengthStart + 8
                let valueEnd = min(bytes.endIndex, valueStart + length)
                fields[String(decoding: line, as: UTF8.self)] = String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self)
                index = valueEnd + 1
            }
        }
        return fields
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
