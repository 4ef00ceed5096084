import ATSPolicy
import Foundation
import Glibc
import POSIX

/// The one HTTP GET the trust evaluation makes: a caIssuers URL, over a blocking socket bounded by a
/// deadline, directly or through an http:// parent proxy. HTTP/1.1 with `Connection: close`; the body
/// is delimited by Content-Length, chunked coding, or the end of the connection, and never read past
/// the size limit.
enum CAIssuersHTTP {
    struct Problem: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }

    /// An `http://` URL split for a request.
    struct Target: Equatable {
        var host: String
        var port: Int
        /// Path and query, "/" at least.
        var path: String

        /// `Host:` and the absolute form use brackets around an IPv6 literal.
        var authority: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == 80 ? name : "\(name):\(port)"
        }

        var url: String { "http://\(authority)\(path)" }

        init?(_ url: String) {
            guard url.lowercased().hasPrefix("http://") else { return nil }
            var rest = Substring(url.dropFirst(7))
            if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            let authority = rest[..<end]
            path = end == rest.endIndex ? "/" : (rest[end] == "?" ? "/" : "") + String(rest[end...])
            guard !authority.isEmpty, !authority.contains("@") else { return nil }
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let after = authority[authority.index(after: close)...]
                if after.isEmpty { port = 80 } else {
                    guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { return nil }
                    port = number
                }
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
                port = number
            } else {
                host = String(authority)
                port = 80
            }
            guard !host.isEmpty, (1...65_535).contains(port), !path.contains(" ") else { return nil }
        }
    }

    /// The body at `url`, following up to `maximumRedirects` redirects, all before `deadline`.
    static func get(_ url: String, parent: AIAFetcher.Parent?, deadline: ContinuousClock.Instant, timeout: Double,
                    maximumBytes: Int, maximumRedirects: Int) -> Result<[UInt8], Problem> {
        guard var target = Target(url) else {
            return .failure(Problem("is not an http:// URL the device fetches"))
        }
        var visited = [target.url]
        while true {
            let answer: Answer
            switch exchange(target, parent: parent, deadline: deadline, timeout: timeout, maximumBytes: maximumBytes) {
            case .success(let made): answer = made
            case .failure(let problem): return .failure(problem)
            }
            switch answer.status {
            case 200:
                return .success(answer.body)
            case 301, 302, 303, 307, 308:
                guard let location = answer.location else {
                    return .failure(Problem("answered \(answer.statusLine) without a Location"))
                }
                guard visited.count <= maximumRedirects else {
                    return .failure(Problem("redirected more than \(maximumRedirects) times"
                                            + " (\((visited + [location]).joined(separator: " -> ")))"))
                }
                let next = location.hasPrefix("/") ? "http://\(target.authority)\(location)" : location
                guard let redirected = Target(next) else {
                    return .failure(Problem("redirected to \(location), which is not an http:// URL"))
                }
                target = redirected
                visited.append(target.url)
            default:
                return .failure(Problem("answered \(answer.statusLine)"))
            }
        }
    }

    private struct Answer {
        var status: Int
        var statusLine: String
        var location: String?
        var body: [UInt8]
    }

    /// One request and its answer.
    private static func exchange(_ target: Target, parent: AIAFetcher.Parent?, deadline: ContinuousClock.Instant,
                                 timeout: Double, maximumBytes: Int) -> Result<Answer, Problem> {
        let host = parent?.host ?? target.host
        let port = parent?.port ?? target.port
        let fd: Int32
        switch connect(host: host, port: port, deadline: deadline, timeout: timeout, via: parent != nil) {
        case .success(let connected): fd = connected
        case .failure(let problem): return .failure(problem)
        }
        defer { SystemCall.close(fd) }
        var request = "GET \(parent == nil ? target.path : target.url) HTTP/1.1\r\nHost: \(target.authority)\r\n"
            + "User-Agent: atsgate (caIssuers fetch)\r\nAccept: */*\r\nConnection: close\r\n"
        if let authorization = parent?.authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        var pending = Array(request.utf8)[...]
        while !pending.isEmpty {
            let outcome = pending.withUnsafeBytes { try? SystemCall.write(fd, $0) }
            switch outcome {
            case .done(let count)?: pending = pending.dropFirst(count)
            case .wouldBlock?:
                guard case .ready = Poll.wait(fd: fd, events: Int16(POLLOUT), until: deadline) else {
                    return .failure(Problem("timed out after \(Poll.seconds(timeout)) sending the request"))
                }
            default:
                return .failure(Problem("closed the connection before taking the request"))
            }
        }
        return read(fd, deadline: deadline, timeout: timeout, maximumBytes: maximumBytes)
    }

    private static func connect(host: String, port: Int, deadline: ContinuousClock.Instant, timeout: Double,
                                via parent: Bool) -> Result<Int32, Problem> {
        let what = parent ? "the parent proxy \(host):\(port)" : "\(host):\(port)"
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let addresses: [IPAddress]
        if let literal = IPAddress.parseStrict(Substring(bare)) {
            addresses = [literal]
        } else {
            switch AddressLookup.resolve(bare, onlyConfigured: false) {
            case .success(let found): addresses = found
            case .failure(let failure): return .failure(Problem("cannot resolve \(what): \(failure.message)"))
            }
        }
        var last = Problem("\(what) has no address")
        for address in addresses {
            let left = ContinuousClock.now.duration(to: deadline)
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            guard seconds > 0 else { return .failure(Problem("timed out after \(Poll.seconds(timeout)) connecting to \(what)")) }
            do {
                return .success(try Socket.connect(to: SocketAddress(ip: address, port: port), timeout: seconds))
            } catch {
                last = error.code == ETIMEDOUT
                    ? Problem("timed out after \(Poll.seconds(timeout)) connecting to \(what)")
                    : Problem("cannot connect to \(what): \(String(cString: strerror(error.code)))")
            }
        }
        return .failure(last)
    }

    /// The answer on `fd`: its head, then its body as the head delimits it, up to `maximumBytes`.
    private static func read(_ fd: Int32, deadline: ContinuousClock.Instant, timeout: Double,
                             maximumBytes: Int) -> Result<Answer, Problem> {
        let headLimit = 16 * 1024
        var bytes: [UInt8] = []
        var head: (status: Int, line: String, fields: [String: String], end: Int)?
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var ended = false
        while true {
            if head == nil, let end = bytes.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A])?.upperBound {
                guard let parsed = parseHead(bytes[..<end]) else { return .failure(Problem("answered with something that is not HTTP")) }
                head = (parsed.status, parsed.line, parsed.fields, end)
            }
            if let head {
                let body = bytes[head.end...]
                if let length = head.fields["content-length"].flatMap({ Int($0) }) {
                    guard length <= maximumBytes else {
                        return .failure(Problem("answered with \(length) bytes, more than the \(maximumBytes)-byte limit"))
                    }
                    if body.count >= length {
                        return .success(Answer(status: head.status, statusLine: head.line, location: head.fields["location"],
                                               body: Array(body.prefix(length))))
                    }
                } else if head.fields["transfer-encoding"]?.lowercased().contains("chunked") == true {
                    switch Chunked.decode(body, limit: maximumBytes) {
                    case .complete(let decoded):
                        return .success(Answer(status: head.status, statusLine: head.line, location: head.fields["location"],
                                               body: decoded))
                    case .incomplete: break
                    case .tooLarge:
                        return .failure(Problem("answered with more than the \(maximumBytes)-byte limit"))
                    case .malformed:
                        return .failure(Problem("answered with a malformed chunked body"))
                    }
                } else {
                    guard body.count <= maximumBytes else {
                        return .failure(Problem("answered with more than the \(maximumBytes)-byte limit"))
                    }
                    if ended {
                        return .success(Answer(status: head.status, statusLine: head.line, location: head.fields["location"],
                                               body: Array(body)))
                    }
                }
                if ended { return .failure(Problem("closed the connection before the end of the answer")) }
            } else {
                guard bytes.count <= headLimit else { return .failure(Problem("answered with a head of more than \(headLimit) bytes")) }
                if ended {
                    return .failure(Problem(bytes.isEmpty ? "closed the connection without answering"
                                                          : "answered with something that is not HTTP"))
                }
            }
            let outcome = buffer.withUnsafeMutableBytes { try? SystemCall.read(fd, into: $0) }
            switch outcome {
            case .done(let count)?: bytes += buffer[..<count]
            case .endOfFile?: ended = true
            case .wouldBlock?:
                guard case .ready = Poll.wait(fd: fd, events: Int16(POLLIN), until: deadline) else {
                    return .failure(Problem("timed out after \(Poll.seconds(timeout))"))
                }
            case nil:
                return .failure(Problem("the connection failed while reading the answer"))
            }
        }
    }

    /// "HTTP/1.1 200 OK" and the fields, names in lower case; nil when it is not an HTTP/1.x head.
    private static func parseHead(_ bytes: ArraySlice<UInt8>) -> (status: Int, line: String, fields: [String: String])? {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let line = lines.removeFirst()
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            return nil
        }
        var fields: [String: String] = [:]
        for field in lines where !field.isEmpty {
            guard let colon = field.firstIndex(of: ":") else { return nil }
            fields[field[..<colon].lowercased()] = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, line, fields)
    }

    /// RFC 9112 section 7.1 chunked coding, decoded once all of it is there.
    enum Chunked {
        enum Outcome: Equatable {
            case complete([UInt8]), incomplete, tooLarge, malformed
        }

        static func decode(_ bytes: ArraySlice<UInt8>, limit: Int) -> Outcome {
            var body: [UInt8] = []
            var index = bytes.startIndex
            while true {
                guard let lineEnd = bytes[index...].firstRange(of: [0x0D, 0x0A]) else { return .incomplete }
                let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self)
                    .split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard let size = Int(sizeText, radix: 16), size >= 0 else { return .malformed }
                index = lineEnd.upperBound
                if size == 0 { return .complete(body) }
                guard body.count + size <= limit else { return .tooLarge }
                guard bytes.endIndex - index >= size + 2 else { return .incomplete }
                body += bytes[index..<(index + size)]
                index += size
                guard bytes[index] == 0x0D, bytes[index + 1] == 0x0A else { return .malformed }
                index += 2
            }
        }
    }
}
