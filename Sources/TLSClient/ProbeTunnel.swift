import ATSPolicy
import Glibc
import POSIX

/// A probe's way through a parent proxy: connect to the parent, `CONNECT` the target with the
/// parent's credentials, and hand over the socket once the parent answers 2xx. (The proxy's own
/// tunnels do the same on the event loop; a probe runs off the loops and may block.)
public struct ProbeTunnel: Sendable, Equatable {
    /// The parent's address and port.
    public var proxy: SocketAddress
    /// `Basic ...`, when the parent has credentials.
    public var authorization: String?

    public init(proxy: SocketAddress, authorization: String?) {
        self.proxy = proxy
        self.authorization = authorization
    }

    /// Asks the parent on `fd` to CONNECT to `authority`; reads its answer head (byte by byte, so
    /// nothing of the origin's is taken), within `timeout` seconds.
    func open(_ fd: Int32, authority: String, timeout: Double) -> ProbeFailure? {
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        var bytes = Array((request + "\r\n").utf8)
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while !bytes.isEmpty {
            let outcome = bytes.withUnsafeBytes { try? SystemCall.write(fd, $0) }
            switch outcome {
            case .done(let n)?: bytes.removeFirst(n)
            case .wouldBlock?:
                guard case .ready = Poll.wait(fd: fd, events: Int16(POLLOUT), until: deadline) else {
                    return ProbeFailure(code: .timeout, message: "the parent proxy \(proxy) did not take CONNECT \(authority)")
                }
            default:
                return ProbeFailure(code: .unreachable, message: "the parent proxy \(proxy) closed the connection")
            }
        }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) {
            guard head.count < 64 * 1024 else {
                return ProbeFailure(code: .unreachable, message: "the parent proxy \(proxy) answered CONNECT with no end of head")
            }
            let n = recv(fd, &byte, 1, 0)
            if n == 1 { head.append(byte); continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard case .ready = Poll.wait(fd: fd, events: Int16(POLLIN), until: deadline) else {
                    return ProbeFailure(code: .timeout, message: "the parent proxy \(proxy) did not answer CONNECT \(authority)")
                }
                continue
            }
            return ProbeFailure(code: .unreachable, message: "the parent proxy \(proxy) closed the connection before answering CONNECT")
        }
        let statusLine = String(decoding: head.prefix { $0 != 0x0D }, as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            return ProbeFailure(code: .unreachable, message: "the parent proxy \(proxy) answered CONNECT with no HTTP status")
        }
        guard (200..<300).contains(status) else {
            return ProbeFailure(code: .refused, message: "the parent proxy \(proxy) refused CONNECT \(authority): \(statusLine)")
        }
        return nil
    }
}
