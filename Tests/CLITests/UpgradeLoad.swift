import Foundation
import Glibc
import Synchronization
import TestSupport

// Traffic that must cross an upgrade untouched: tunnels streaming numbered bytes, keep-alive
// clients idle at the signal, and a steady stream of new connections.

/// Tunnels through the proxy to an echo origin, each streaming a numbered sequence (8-byte
/// big-endian counters) at a steady pace and checking every byte that comes back, in order: a byte
/// lost, repeated or moved shows as a wrong byte at a known offset. One thread drives them all.
final class StreamingTunnels: @unchecked Sendable {
    struct Tunnel {
        var fd: Int32
        /// The client's port: what its record's `client` names.
        var port: Int
        var sent = 0
        var received = 0
        var unsent: [UInt8] = []
        var failure: String?
    }

    private let lock = NSLock()
    private var tunnels: [Tunnel] = []
    /// Guarded by `lock`, as the tunnels are: no chunk is added once `finish` has set it.
    private var sendingStopped = false
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    /// Bytes in flight per tunnel at most, and bytes per step.
    static let window = 8192
    static let chunk = 512

    init(count: Int, proxyPort: Int, originPort: Int) throws {
        for _ in 0..<count {
            let fd = try connectLoopback(port: proxyPort)
            let request = Array("CONNECT 127.0.0.1:\(originPort) HTTP/1.1\r\nHost: 127.0.0.1:\(originPort)\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var answer = [UInt8]()
            var byte: UInt8 = 0
            var limit = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            // Byte by byte up to the blank line: nothing of the tunnel is read here.
            while !answer.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), recv(fd, &byte, 1, 0) == 1 { answer.append(byte) }
            guard String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200 ") else {
                close(fd)
                throw HarnessError("CONNECT answered: \(String(decoding: answer, as: UTF8.self))")
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var local = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            tunnels.append(Tunnel(fd: fd, port: Int(UInt16(bigEndian: local.sin_port))))
        }
        let thread = Thread { [self] in drive() }
        thread.name = "streaming-tunnels"
        thread.start()
    }

    /// The byte at `offset` of every tunnel's sequence.
    static func byte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: UInt64(offset / 8) >> (UInt64(7 - offset % 8) * 8))
    }

    /// Bytes every tunnel has had echoed so far, at least.
    var leastReceived: Int { lock.withLock { tunnels.map(\.received).min() ?? 0 } }

    /// Stops sending, waits (bounded) until every tunnel has its bytes back, closes them all, and
    /// returns them.
    func finish(timeout: TimeInterval = 20) -> [Tunnel] {
        lock.withLock { sendingStopped = true }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, lock.withLock({ tunnels.contains { $0.failure == nil && $0.received < $0.sent } }) {
            usleep(10_000)
        }
        running.store(false, ordering: .relaxed)
        finished.wait()
        return lock.withLock {
            for tunnel in tunnels { close(tunnel.fd) }
            return tunnels
        }
    }

    private func drive() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var lastSend = Date.distantPast
        while running.load(ordering: .relaxed) {
            let sendNow = Date().timeIntervalSince(lastSend) >= 0.02
            if sendNow { lastSend = Date() }
            var polled = lock.withLock {
                tunnels.map { pollfd(fd: $0.fd, events: Int16($0.unsent.isEmpty ? POLLIN : (POLLIN | POLLOUT)), revents: 0) }
            }
            _ = poll(&polled, nfds_t(polled.count), 10)
            lock.withLock {
                for index in tunnels.indices where tunnels[index].failure == nil {
                    step(&tunnels[index], readable: polled[index].revents != 0, sendNow: sendNow, buffer: &buffer)
                }
            }
        }
        finished.signal()
    }

    private func step(_ tunnel: inout Tunnel, readable: Bool, sendNow: Bool, buffer: inout [UInt8]) {
        if sendNow, !sendingStopped, tunnel.unsent.isEmpty, tunnel.sent - tunnel.received < Self.window {
            tunnel.unsent = (tunnel.sent..<(tunnel.sent + Self.chunk)).map(Self.byte(at:))
            tunnel.sent += Self.chunk
        }
        if !tunnel.unsent.isEmpty {
            let n = tunnel.unsent.withUnsafeBytes { send(tunnel.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                tunnel.unsent.removeFirst(n)
            } else if n < 0, errno != EAGAIN {
                tunnel.failure = "send failed after \(tunnel.sent - tunnel.unsent.count) bytes: \(String(cString: strerror(errno)))"
            }
        }
        guard readable else { return }
        while true {
            let n = recv(tunnel.fd, &buffer, buffer.count, 0)
            if n < 0, errno == EAGAIN { return }
            guard n > 0 else {
                tunnel.failure = "the tunnel ended after \(tunnel.received) bytes: \(n == 0 ? "end of stream" : String(cString: strerror(errno)))"
                return
            }
            for index in 0..<n where buffer[index] != Self.byte(at: tunnel.received + index) {
                tunnel.failure = "byte \(tunnel.received + index): \(buffer[index]), not \(Self.byte(at: tunnel.received + index))"
                return
            }
            tunnel.received += n
        }
    }
}

/// One GET of the origin's /small through the proxy on `client`, as a kept-alive exchange; nil when
/// the answer is the 100 bytes, else what went wrong.
func smallExchange(_ client: RawClient, originPort: Int, close: Bool = false) -> String? {
    client.send("GET http://127.0.0.1:\(originPort)/small HTTP/1.1\r\nHost: 127.0.0.1:\(originPort)\r\n"
                + (close ? "Connection: close\r\n" : "") + "\r\n")
    let answer = client.read(until: String(repeating: "a", count: 100))
    guard answer.hasPrefix("HTTP/1.1 200 "), answer.hasSuffix("\r\n\r\n" + String(repeating: "a", count: 100)) else {
        return answer.isEmpty ? "no answer (the connection ended)" : "answered: \(answer.prefix(200))"
    }
    return nil
}

/// New connections at a steady pace, each one exchange with Connection: close, until stopped:
/// every one must be answered 200 with its body (none refused, reset or 5xx).
final class SteadyConnections: @unchecked Sendable {
    private let succeeded = Atomic<Int>(0)
    private let failures = Mutex<[String]>([])
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    init(proxyPort: Int, originPort: Int, interval: TimeInterval = 0.02) {
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                do {
                    let client = try RawClient(port: proxyPort)
                    if let problem = smallExchange(client, originPort: originPort, close: true) {
                        failures.withLock { $0.append(problem) }
                    } else {
                        succeeded.add(1, ordering: .relaxed)
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                Thread.sleep(forTimeInterval: interval)
            }
            done.signal()
        }
        thread.name = "steady-connections"
        thread.start()
    }

    /// Stops, and says how many exchanges were answered and what went wrong with the others.
    func finish() -> (succeeded: Int, failures: [String]) {
        running.store(false, ordering: .relaxed)
        done.wait()
        return (succeeded.load(ordering: .relaxed), failures.withLock { $0 })
    }

    var count: Int { succeeded.load(ordering: .relaxed) }
}

/// Whether `pid` has exited (gone, or a zombie nobody reaped yet).
func processGone(_ pid: Int32) -> Bool {
    if kill(pid, 0) != 0 { return errno == ESRCH }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let state = stat.split(separator: ")").last?.split(separator: " ").first else { return true }
    return state == "Z"
}

/// Polls `condition` every 20 ms until it holds; false at the timeout.
func eventually(timeout: TimeInterval = 20, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
