import Foundation
import Glibc
import Testing
import TestSupport

/// The daemon under a (fake) service manager: notifications on a real NOTIFY_SOCKET, and sockets
/// inherited through systemd-socket-activate.
@Suite(.serialized) struct SystemdServiceTests {
    @Test func notifiesReadyWatchdogReloadingAndStoppingInOrder() throws {
        let directory = try TemporaryDirectory()
        let listener = try NotifyListener(path: directory.url.appendingPathComponent("notify").path)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = listener.path
        environment["WATCHDOG_USEC"] = "200000"
        environment.removeValue(forKey: "WATCHDOG_PID")
        let process = try BackgroundProcess(Atsgate.binary.path, ["run", "--listen", "127.0.0.1:0"],
                                            environment: environment)
        try process.wait { _, err in err.contains("listening on") }

        let ready = try listener.next { $0.contains("READY=1") }
        #expect(ready.contains("STATUS=0 connections open, 0 decisions"), "\(ready)")
        _ = try listener.next { $0 == "WATCHDOG=1" }

        kill(process.process.processIdentifier, SIGHUP)
        let reloading = try listener.next { $0.contains("RELOADING=1") }
        let monotonic = try #require(reloading.firstMatch(of: /MONOTONIC_USEC=(\d+)/).flatMap { UInt64($0.1) })
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        #expect(monotonic <= nowMicroseconds && nowMicroseconds - monotonic < 30_000_000, "CLOCK_MONOTONIC in µs")
        let readyAgain = try listener.next { $0.contains("READY=1") }
        #expect(readyAgain.contains("last reload: ok"), "\(readyAgain)")

        kill(process.process.processIdentifier, SIGTERM)
        let stopping = try listener.next { $0.contains("STOPPING=1") }
        #expect(stopping.contains("STATUS=Stopping (SIGTERM)"))
        #expect(process.stop() == 0)
    }

    @Test func aBrokenReloadSaysSoInTheStatus() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write("policy.json", "{}")
        let listener = try NotifyListener(path: directory.url.appendingPathComponent("notify").path)
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = listener.path
        let process = try BackgroundProcess(Atsgate.binary.path, ["run", "--listen", "127.0.0.1:0", "--policy", policy],
                                            environment: environment)
        _ = try listener.next { $0.contains("READY=1") }
        try directory.write("policy.json", "[")
        kill(process.process.processIdentifier, SIGHUP)
        let status = try listener.next { $0.contains("Reload failed") }
        #expect(status.contains("STATUS=Reload failed: "), "\(status)")
        #expect(status.contains("policy.json"), "names the file: \(status)")
        #expect(process.stop() == 0)
    }

    @Test func servesThroughSocketsInheritedFromSystemdSocketActivate() throws {
        let origin = try Origin()
        let port = try freePort()
        let adminPort = try freePort()
        let process = try BackgroundProcess("/usr/bin/systemd-socket-activate", [
            "-l", "127.0.0.1:\(port)", "-l", "127.0.0.1:\(adminPort)", "--fdname=proxy:admin",
            // It passes on no environment of its own accord; scripts/sanitize's options must reach the daemon.
            "-E", "ASAN_OPTIONS", "-E", "TSAN_OPTIONS",
            Atsgate.binary.path, "run", "--listen", "127.0.0.1:1",
        ])
        try process.wait { _, err in err.contains("Listening on 127.0.0.1:\(adminPort)") }
        // systemd-socket-activate starts the daemon on the first connection, which then waits in the
        // inherited socket's backlog. (Raw sockets, not curl: Foundation's process monitor waits on the
        // exec'd daemon's pid and would not see another child exit meanwhile.)
        let client = try RawClient(port: port)
        client.send("GET http://127.0.0.1:\(origin.httpPort)/small HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let answer = client.readAll()
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.hasSuffix(String(repeating: "a", count: 100)))
        #expect(process.stderr.contains("listening on 127.0.0.1:\(port); admin on 127.0.0.1:\(adminPort)"),
                "the inherited sockets replace --listen: \(process.stderr)")
        let health = try RawClient(port: adminPort)
        health.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(health.readAll().hasSuffix("\r\n\r\nok\n"))
        #expect(process.stop() == 0)
        #expect(process.stdout.contains(#""action":"allow""#))
    }
}

/// A Unix datagram socket standing in for systemd's notification socket.
final class NotifyListener {
    let path: String
    private let fd: Int32

    /// `credentials`: SO_PASSCRED, so that each datagram says which process sent it (`nextWithSender`).
    init(path: String, credentials: Bool = false) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        if credentials {
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8.prefix(buffer.count - 1))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind \(path): \(errno)") }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram that satisfies `predicate` (earlier ones are skipped); bounded in time.
    func next(_ predicate: (String) -> Bool) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<500 {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw HarnessError("no notification arrived") }
            let text = String(decoding: buffer[..<n], as: UTF8.self)
            if predicate(text) { return text }
        }
        throw HarnessError("no matching notification")
    }

    /// `next`, with the PID of the process that sent it (SCM_CREDENTIALS); descriptors a datagram
    /// carries (sd_notify_barrier's pipe) are closed, which is what releases a barrier.
    func nextWithSender(_ predicate: (String) -> Bool) throws -> (pid: Int32, text: String) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var control = [UInt8](repeating: 0, count: 512)
        for _ in 0..<500 {
            var vector = iovec()
            var message = msghdr()
            let n = buffer.withUnsafeMutableBytes { bytes in
                control.withUnsafeMutableBytes { controlBytes in
                    vector.iov_base = bytes.baseAddress
                    vector.iov_len = bytes.count
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        return recvmsg(fd, &message, 0)
                    }
                }
            }
            guard n >= 0 else { throw HarnessError("no notification arrived") }
            // Control messages: cmsg_len (8 bytes), level, type (4 each), data; each aligned to 8.
            var pid: Int32 = 0
            var offset = 0
            while offset + 16 <= Int(message.msg_controllen) {
                let length = control[offset..<offset + 8].withUnsafeBytes { $0.loadUnaligned(as: Int.self) }
                let level = control[offset + 8..<offset + 12].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
                let type = control[offset + 12..<offset + 16].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
                guard length >= 16 else { break }
                if level == SOL_SOCKET, type == 2 { // SCM_CREDENTIALS: pid, uid, gid
                    pid = control[offset + 16..<offset + 20].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
                }
                if level == SOL_SOCKET, type == 1 { // SCM_RIGHTS
                    for index in stride(from: offset + 16, to: offset + length, by: 4) {
                        close(control[index..<index + 4].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) })
                    }
                }
                offset += (length + 7) & ~7
            }
            let text = String(decoding: buffer[..<n], as: UTF8.self)
            if predicate(text) { return (pid, text) }
        }
        throw HarnessError("no matching notification")
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
