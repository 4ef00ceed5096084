import Foundation
import Glibc
import Testing

/// Tests that change the process's environment or descriptors 3 and up. They share one process with
/// every other test, so they nest in this suite and run one at a time.
@Suite(.serialized) enum ProcessState {}

/// Sets (or, for nil, unsets) environment variables for the duration of `body`, then restores them.
func withEnvironment<Result>(_ values: [String: String?], _ body: () throws -> Result) rethrows -> Result {
    let saved = values.keys.map { ($0, getenv($0).map { String(cString: $0) }) }
    defer { for (name, value) in saved { apply(name, value) } }
    for (name, value) in values { apply(name, value) }
    return try body()
}

private func apply(_ name: String, _ value: String?) {
    if let value { setenv(name, value, 1) } else { unsetenv(name) }
}

/// The variables the service manager sets, all unset: tests start from "not under systemd".
let managerVariablesUnset: [String: String?] = [
    "NOTIFY_SOCKET": nil, "WATCHDOG_USEC": nil, "WATCHDOG_PID": nil,
    "LISTEN_FDS": nil, "LISTEN_PID": nil, "LISTEN_FDNAMES": nil, "JOURNAL_STREAM": nil,
]

/// A bound Unix datagram socket standing in for systemd's notification or journal socket.
final class DatagramSink {
    let path: String
    let fd: Int32

    /// Binds `path`, or a fresh short path under /tmp (sun_path holds 108 bytes).
    init(path: String? = nil) throws {
        self.path = path ?? "/tmp/atsgate-\(UUID().uuidString.prefix(8)).sock"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(self.path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw SinkError("bind \(self.path): \(reason)")
        }
        // A bound on every read, so a missing datagram fails the test instead of hanging it.
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram's bytes.
    func receive() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { throw SinkError("recv on \(path): \(String(cString: strerror(errno)))") }
        return Array(buffer[..<count])
    }

    func receiveText() throws -> String { String(decoding: try receive(), as: UTF8.self) }

    deinit {
        Glibc.close(fd)
        unlink(path)
    }
}

struct SinkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
