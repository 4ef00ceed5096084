import Foundation
import Glibc
import Synchronization

/// The origin that misbehaves on purpose, on three loopback ports, a thread per connection:
/// - `http`: answers by path: `/reset` resets the connection once the head is in, `/stall` reads the
///   head and never answers (until the proxy gives up, or 60 s), `/truncate` promises 100 bytes and
///   sends 10, anything else gets `200 ok`;
/// - `eof`: reads until the client half-closes, then answers `got N bytes` and closes (a tunnel
///   must pass the half-close on);
/// - `reset`: takes what comes for 200 ms, then resets (an origin dying under a tunnel).
final class FaultOrigin: @unchecked Sendable {
    let httpPort: Int
    let eofPort: Int
    let resetPort: Int
    private let listeners: [Int32]
    private let stopped = Atomic<Bool>(false)

    init() throws {
        let roles = [Role.http, .eof, .reset]
        let bound = try roles.map { _ in try FaultOrigin.listen() }
        listeners = bound.map(\.0)
        httpPort = bound[0].1
        eofPort = bound[1].1
        resetPort = bound[2].1
        for (role, (fd, _)) in zip(roles, bound) {
            Thread.detachNewThread { [self] in acceptLoop(fd, role) }
        }
    }

    private enum Role { case http, eof, reset }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        for fd in listeners {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    private static func listen() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 512) == 0 else { throw SoakError("fault origin: cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    private func acceptLoop(_ listener: Int32, _ role: Role) {
        while !stopped.load(ordering: .relaxed) {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            Thread.detachNewThread { [self] in serve(fd, role) }
        }
    }

    private func serve(_ fd: Int32, _ role: Role) {
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        switch role {
        case .eof:
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 16384)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                total += n
            }
            write(fd, "got \(total) bytes\n")
            Glibc.close(fd)
        case .reset:
            var short = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 16384)
            _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            FaultOrigin.reset(fd)
        case .http:
            serveHTTP(fd)
        }
    }

    /// Keep-alive requests, each answered as its path says.
    private func serveHTTP(_ fd: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            while HTTPResponse.headEnd(pending) == nil {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 {
                    Glibc.close(fd)
                    return
                }
                pending += buffer[..<n]
            }
            let end = HTTPResponse.headEnd(pending)!
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end)
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            switch path {
            case "/reset":
                return FaultOrigin.reset(fd)
            case "/stall":
                // Never answers: the proxy's idle timeout ends it (or the client goes).
                _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                Glibc.close(fd)
                return
            case "/truncate":
                write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                Glibc.close(fd)
                return
            default:
                write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            }
        }
    }

    private func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
    }
}
