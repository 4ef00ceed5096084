import Foundation
import Glibc

/// One TCP connection to a loopback port, non-blocking, every wait bounded by a deadline: what the
/// soak's clients speak through, so that no client ever hangs the run.
final class Wire {
    let fd: Int32
    private var closed = false

    /// Connects to 127.0.0.1:`port` within `timeout` seconds, or throws.
    init(port: Int, timeout: Double = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SoakError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 {
            guard errno == EINPROGRESS, Wire.poll(fd, Int16(POLLOUT), timeout: timeout) else {
                let code = errno
                Glibc.close(fd)
                throw SoakError("connect 127.0.0.1:\(port): \(result != 0 && code != EINPROGRESS ? String(cString: strerror(code)) : "timed out")")
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 {
                Glibc.close(fd)
                throw SoakError("connect 127.0.0.1:\(port): \(String(cString: strerror(error)))")
            }
        }
    }

    static func poll(_ fd: Int32, _ events: Int16, timeout: Double) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            let n = Glibc.poll(&entry, 1, left)
            if n > 0 { return true }
            if n == 0 || errno != EINTR { return false }
        }
    }

    /// Sends all of `bytes` within `timeout`; false when the peer is gone or the time is up.
    @discardableResult
    func send(_ bytes: [UInt8], timeout: Double = 5) -> Bool {
        var offset = 0
        let deadline = Date().addingTimeInterval(timeout)
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0, errno == EAGAIN || errno == EINTR {
                guard Wire.poll(fd, Int16(POLLOUT), timeout: deadline.timeIntervalSinceNow) else { return false }
            } else {
                return false
            }
        }
        return true
    }

    @discardableResult
    func send(_ text: String, timeout: Double = 5) -> Bool { send(Array(text.utf8), timeout: timeout) }

    /// How a read ended.
    enum End: Equatable { case matched, closed, reset, timedOut }

    /// Reads into `buffer` until `done(buffer)` holds, the peer closes or resets, or `timeout` passes.
    func read(into buffer: inout [UInt8], timeout: Double, until done: ([UInt8]) -> Bool) -> End {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 16384)
        while !done(buffer) {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                buffer += chunk[..<n]
            } else if n == 0 {
                return done(buffer) ? .matched : .closed
            } else if errno == EAGAIN || errno == EINTR {
                guard Wire.poll(fd, Int16(POLLIN), timeout: deadline.timeIntervalSinceNow) else { return .timedOut }
            } else {
                return .reset
            }
        }
        return .matched
    }

    /// Reads one HTTP response: its head, then a body framed by Content-Length, chunked, or running
    /// to the close. nil when no complete head came.
    func readResponse(timeout: Double = 10, headOnly: Bool = false) -> HTTPResponse? {
        var buffer: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        _ = read(into: &buffer, timeout: timeout) { HTTPResponse.headEnd($0) != nil }
        guard let end = HTTPResponse.headEnd(buffer), var response = HTTPResponse(head: Array(buffer[..<end])) else {
            return nil
        }
        response.body = Array(buffer[end...])
        if headOnly { return response }
        let left = max(0.1, deadline.timeIntervalSinceNow)
        if let length = response.contentLength {
            response.end = read(into: &response.body, timeout: left) { $0.count >= length }
        } else if response.chunked {
            response.end = read(into: &response.body, timeout: left) { HTTPResponse.chunkedEnd($0) }
        } else if response.hasNoBody {
            response.end = .matched
        } else {
            response.end = read(into: &response.body, timeout: left) { _ in false }
        }
        return response
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with a reset (SO_LINGER 0): a client that vanishes mid-exchange.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}

/// A response as a soak client needs it: the status, the framing, what of the body came.
struct HTTPResponse {
    var status: Int
    var head: String
    var contentLength: Int?
    var chunked: Bool
    var closes: Bool
    var body: [UInt8] = []
    var end = Wire.End.matched

    init?(head bytes: [UInt8]) {
        head = String(decoding: bytes, as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let first = lines.first, first.hasPrefix("HTTP/1."), first.count >= 12,
              let code = Int(first.dropFirst(9).prefix(3)) else { return nil }
        status = code
        var length: Int?
        var chunked = false
        var closes = false
        for line in lines.dropFirst() {
            let lower = line.lowercased()
            if lower.hasPrefix("content-length:") { length = Int(lower.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
            if lower.hasPrefix("transfer-encoding:"), lower.contains("chunked") { chunked = true }
            if lower.hasPrefix("connection:"), lower.contains("close") { closes = true }
        }
        contentLength = length
        self.chunked = chunked
        self.closes = closes
    }

    /// 1xx, 204 and 304 carry no body; nor does a 200 to CONNECT (the caller reads the head only).
    var hasNoBody: Bool { status < 200 || status == 204 || status == 304 }

    /// The whole body arrived as framed.
    var complete: Bool {
        if let contentLength { return body.count >= contentLength }
        return end == .matched || end == .closed
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 0x0D && bytes[index + 1] == 0x0A && bytes[index + 2] == 0x0D && bytes[index + 3] == 0x0A {
            return index + 4
        }
        return nil
    }

    /// A chunked body's last chunk and (empty or not) trailer section have arrived.
    static func chunkedEnd(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.hasPrefix("0\r\n") && text.hasSuffix("\r\n\r\n") || text.contains("\r\n0\r\n") && text.hasSuffix("\r\n\r\n")
    }
}

/// What went wrong, said as it is.
struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
