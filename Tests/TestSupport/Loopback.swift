import Foundation
import Glibc

/// A test harness failure, with what the test needs to know.
public struct HarnessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A loopback TCP listener on a port the kernel picks; the kernel completes connections to it, and
/// nothing accepts them unless the caller does. The caller closes `fd`.
public func loopbackListener(backlog: Int32 = 16) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && listen(fd, backlog) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard ok else {
        close(fd)
        throw HarnessError("cannot open a loopback listener")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A blocking TCP connection to 127.0.0.1:`port` from `source` (a loopback address, 127.0.0.2 for a
/// second client; else the system's choice), made non-blocking when asked; the caller closes it.
public func connectLoopback(port: Int, nonBlocking: Bool = false, source: UInt32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = source.bigEndian
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw HarnessError("bind to the source address failed")
        }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        close(fd)
        throw HarnessError("connect to 127.0.0.1:\(port) failed")
    }
    if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    return fd
}

/// A port nothing listens on right now (bind to 0, read it, close).
public func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard ok else { throw HarnessError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

public func waitUntilListening(_ port: Int, timeout: TimeInterval = 10) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let client = try? RawClient(port: port) { client.close(); return }
        usleep(20_000)
    }
    throw HarnessError("nothing listens on 127.0.0.1:\(port)")
}

/// A blocking loopback TCP client for exact bytes on the wire; every read is bounded by a timeout.
public final class RawClient {
    public let fd: Int32

    /// `source`: a loopback address to connect from (127.0.0.2 for a second client), else the system's choice.
    public init(port: Int, timeout: Int = 10, source: UInt32? = nil) throws {
        fd = try connectLoopback(port: port, source: source)
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads until the peer closes (or the timeout).
    public func readAll() -> String {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data += buffer[..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads until `marker` has arrived (or the peer closes, or the timeout).
    public func read(until marker: String) -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !text.contains(marker) {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        return text
    }

    private var isOpen = true

    public func close() {
        guard isOpen else { return }
        isOpen = false
        Glibc.close(fd)
    }

    deinit { close() }
}
