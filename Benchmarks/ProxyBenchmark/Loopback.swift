import Foundation
import Glibc

/// Ports on 127.0.0.1: whether something listens, the first free one, and a small HTTP GET for
/// atsgate's admin listener. Everything the benchmark touches is on loopback.
enum Loopback {
    private static func connectedSocket(_ port: Int, timeoutSeconds: Int = 1) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if !ok { close(fd); return nil }
        return fd
    }

    static func isOpen(_ port: Int) -> Bool {
        guard let fd = connectedSocket(port) else { return false }
        close(fd)
        return true
    }

    static func freePort(from port: Int) -> Int {
        var candidate = port
        while isOpen(candidate) { candidate += 1 }
        return candidate
    }

    /// Waits up to 10 s until the port accepts, or the process exits.
    static func waitOpen(_ port: Int, while process: Spawned) -> Bool {
        for _ in 0..<200 {
            if isOpen(port) { return true }
            if !process.isRunning { return false }
            usleep(50_000)
        }
        return false
    }

    /// GET path over HTTP/1.1 with Connection: close; the whole answer, or nil.
    static func get(_ port: Int, path: String) -> String? {
        guard let fd = connectedSocket(port, timeoutSeconds: 3) else { return nil }
        defer { close(fd) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            answer.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
