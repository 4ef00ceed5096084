import ATSPolicy
import Glibc

/// Blocking TCP connects bounded in time, and name resolution, for the probe.
///
/// The probe runs off every event loop, so blocking here is fine; the socket is left non-blocking for
/// the handshake, which polls with its own deadline.
enum SocketConnector {
    /// A connected non-blocking socket to `address` (an IP literal), or why not.
    static func connect(address: String, port: Int, timeout: Double) -> Result<Int32, ProbeFailure> {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        let bare = address.hasPrefix("[") ? String(address.dropFirst().dropLast()) : address
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, bare, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v4, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        } else {
            var v6 = sockaddr_in6()
            guard inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 else {
                return .failure(ProbeFailure(code: .unreachable, message: "\(address) is not an IP address"))
            }
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v6, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        }
        let endpoint = family == AF_INET6 ? "[\(bare)]:\(port)" : "\(bare):\(port)"

        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            return .failure(ProbeFailure(code: .unreachable, message: "socket: \(String(cString: strerror(errno)))"))
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let started = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        var failure = started == 0 ? 0 : errno
        if failure == EINPROGRESS || failure == EINTR {
            switch Poll.wait(fd: fd, events: Int16(POLLOUT), timeout: timeout) {
            case .ready:
                var code: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size)
                failure = code
            case .timedOut:
                Glibc.close(fd)
                return .failure(ProbeFailure(code: .timeout,
                                             message: "connecting to \(endpoint) timed out after \(Poll.seconds(timeout))"))
            case .failed(let code):
                failure = code
            }
        }
        guard failure == 0 else {
            Glibc.close(fd)
            let text = String(cString: strerror(failure))
            let code: ProbeFailure.Code = failure == ECONNREFUSED ? .refused : .unreachable
            return .failure(ProbeFailure(code: code, message: "connecting to \(endpoint): \(text)"))
        }
        return .success(fd)
    }

    /// The addresses `host` resolves to (IPv4 and IPv6, in resolver order), or why not.
    static func resolve(_ host: String, port: Int) -> Result<[String], ProbeFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            let text = String(cString: gai_strerror(status))
            return .failure(ProbeFailure(code: .dns, message: "cannot resolve \(host): \(text)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if let address = entry.pointee.ai_addr {
                if entry.pointee.ai_family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        var raw = $0.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                    }
                } else if entry.pointee.ai_family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        var raw = $0.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                    }
                }
            }
            let address = String(nulTerminated: text)
            if !address.isEmpty, !addresses.contains(address) { addresses.append(address) }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(ProbeFailure(code: .dns, message: "cannot resolve \(host): no address"))
        }
        return .success(addresses)
    }
}
