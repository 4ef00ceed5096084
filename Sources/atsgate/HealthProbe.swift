import ATSPolicy
import Glibc
import POSIX

/// One HTTP/1.1 GET over a plain socket, bounded by a deadline, reading only the status line: all a
/// health check needs, without curl or URLSession in the image.
struct HealthProbe {
    /// Where to connect: a host (IP literal or name) and a port.
    struct Target: Equatable {
        var host: String
        var port: Int

        /// `HOST:PORT`, `[IPv6]:PORT`.
        init?(parsing text: String) {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            var host = text[..<colon]
            if host.hasPrefix("[") {
                guard host.hasSuffix("]") else { return nil }
                host = host.dropFirst().dropLast()
            } else if host.contains(":") {
                return nil // IPv6 needs brackets
            }
            let portText = text[text.index(after: colon)...]
            guard !host.isEmpty, !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let port = Int(portText), (1...65535).contains(port) else { return nil }
            self.host = String(host)
            self.port = port
        }

        /// The Host header's value.
        var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The answer's status: the code and the status line after the version, e.g. "503 Service Unavailable",
    /// and the head's field lines as received (what `atsgate doctor probe` reads).
    struct Status: Equatable {
        var code: Int
        var text: String
        var fields: [String] = []
        /// The body, when asked for (`readBody`).
        var body = ""
    }

    /// Why there is no status: one line for the user.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    var target: Target
    var path: String
    var timeout: Duration
    /// More request fields, and the User-Agent.
    var fields: [String] = []
    var userAgent = "atsgate-health"
    /// Read the body too, to the end of the connection (at most 8 MiB).
    var readBody = false

    func get() throws(Failure) -> Status {
        let deadline = ContinuousClock.now + timeout
        let fd = try connect(before: deadline)
        defer { close(fd) }
        let request = "GET \(path) HTTP/1.1\r\nHost: \(target.authority)\r\nUser-Agent: \(userAgent)\r\n"
            + fields.map { $0 + "\r\n" }.joined() + "Accept: */*\r\nConnection: close\r\n\r\n"
        try send(Array(request.utf8), on: fd, before: deadline)
        return try readStatus(from: fd, before: deadline)
    }

    /// Tries each address the host resolves to (a name may give ::1 and 127.0.0.1) until one accepts.
    private func connect(before deadline: ContinuousClock.Instant) throws(Failure) -> Int32 {
        let addresses: [IPAddress]
        switch AddressLookup.resolve(target.host) {
        case .success(let resolved): addresses = resolved
        case .failure(let failure): throw Failure(failure.message)
        }
        var lastError = Failure("no address for \(target.host)")
        for ip in addresses {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw Failure("no answer within \(Self.seconds(timeout)) (connecting)") }
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            let connected = Result { () throws(SystemError) in
                try Socket.connect(to: SocketAddress(ip: ip, port: target.port), timeout: seconds)
            }
            switch connected {
            case .success(let fd):
                return fd
            case .failure(let error) where error.code == ETIMEDOUT:
                throw Failure("no answer within \(Self.seconds(timeout)) (connecting)")
            case .failure(let error):
                lastError = Failure("cannot connect: \(String(cString: strerror(error.code)))")
            }
        }
        throw lastError
    }

    private func send(_ bytes: [UInt8], on fd: Int32, before deadline: ContinuousClock.Instant) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT), on: fd, before: deadline, doing: "sending the request")
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw Failure("sending the request: \(errorText())")
            }
            offset += sent
        }
    }

    /// Reads the head (to its empty line, or the end); a head longer than 8 KiB is not an HTTP server's.
    private func readStatus(from fd: Int32, before deadline: ContinuousClock.Instant) throws(Failure) -> Status {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.contains(UInt8(ascii: "\n")) || !String(decoding: received, as: UTF8.self).contains("\r\n\r\n"),
              received.count < 8192 {
            try wait(for: Int16(POLLIN), on: fd, before: deadline, doing: "waiting for the answer")
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw Failure("reading the answer: \(errorText())")
            }
            if count == 0 { break }
            received += buffer[..<count]
        }
        let line = String(decoding: received.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            .trimmingSuffix("\r")
        guard let match = line.wholeMatch(of: /HTTP\/1\.[01] ([0-9]{3})(?: .*)?/), let code = Int(match.1) else {
            throw Failure(received.isEmpty ? "closed without an answer" : "not an HTTP answer: \(line.prefix(80))")
        }
        while readBody, received.count < 8 << 20 {
            try wait(for: Int16(POLLIN), on: fd, before: deadline, doing: "reading the body")
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw Failure("reading the body: \(errorText())")
            }
            if count == 0 { break }
            received += buffer[..<count]
        }
        let parts = String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n\r\n")
        return Status(code: code, text: String(line.dropFirst("HTTP/1.1 ".count)),
                      fields: Array(parts[0].components(separatedBy: "\r\n").dropFirst()),
                      body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    private func wait(for events: Int16, on fd: Int32, before deadline: ContinuousClock.Instant,
                      doing activity: String) throws(Failure) {
        switch Poll.wait(fd: fd, events: events, until: deadline) {
        case .ready: return
        case .timedOut: throw Failure("no answer within \(Self.seconds(timeout)) (\(activity))")
        case .failed(let code): throw Failure("poll: \(String(cString: strerror(code)))")
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value))s" : "\(value)s"
    }
}

private func errorText() -> String { String(cString: strerror(errno)) }

private extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
