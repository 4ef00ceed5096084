import CAtsgateShims
import Glibc

/// Non-blocking TCP sockets: listening and connecting. Descriptors are returned to the caller to own.
public enum Socket {
    /// `transparent`: IP_TRANSPARENT, for a TPROXY listener (`--listen-tproxy`), which accepts
    /// connections to addresses that are not its own; each accepted socket's local address is then
    /// the client's original destination. Needs CAP_NET_ADMIN.
    public static func listen(on address: SocketAddress, backlog: Int32 = 4096,
                              transparent: Bool = false) throws(SystemError) -> Int32 {
        let fd = atsgate_socket(address.family, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { throw SystemError(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setNoDelay(fd)
        if !address.ip.isIPv4 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if transparent {
            do {
                try setTransparent(fd, family: address.family)
            } catch {
                SystemCall.close(fd)
                throw SystemError(call: "\(error.call) on \(address)", code: error.code)
            }
        }
        let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "bind \(address)", code: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "listen \(address)", code: code)
        }
        return fd
    }

    /// Starts a non-blocking connect; the caller asks `connectProgress`, and if it is still in progress
    /// waits for writability and then calls `connectResult`.
    public static func startConnect(to address: SocketAddress) throws(SystemError) -> Int32 {
        let fd = atsgate_socket(address.family, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { throw SystemError(call: "socket", code: errno) }
        setNoDelay(fd)
        let result = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result != 0, errno != EINPROGRESS {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "connect \(address)", code: code)
        }
        return fd
    }

    /// The outcome of a finished non-blocking connect (SO_ERROR), 0 on success.
    public static func connectResult(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }

    public enum ConnectProgress: Equatable, Sendable {
        case connected
        case inProgress
        case failed(Int32)
    }

    /// Where a non-blocking connect stands, asked without waiting by calling connect(2) again: 0 (or
    /// EISCONN) once established, EALREADY while the handshake runs, else the connection's error. On
    /// loopback and fast LANs the handshake is usually done by the time the first connect(2) returns,
    /// and this one call replaces a poll(2) and a getsockopt(SO_ERROR).
    public static func connectProgress(_ fd: Int32, to address: SocketAddress) -> ConnectProgress {
        guard address.withSockAddr({ Glibc.connect(fd, $0, $1) }) != 0 else { return .connected }
        switch errno {
        case EISCONN: return .connected
        case EALREADY, EINPROGRESS, EINTR: return .inProgress
        case let code: return .failed(code)
        }
    }

    public static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return ok == 0 ? SocketAddress(storage: storage) : nil
    }

    /// TCP_NODELAY; set on a listening socket, every accepted socket inherits it.
    public static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    public static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// An inherited socket (socket activation) made non-blocking, and the address it is bound to.
    public static func adopt(_ fd: Int32) throws(SystemError) -> SocketAddress {
        try setNonBlocking(fd)
        guard let address = localAddress(fd) else {
            throw SystemError(call: "getsockname of inherited descriptor \(fd)", code: EBADF)
        }
        return address
    }

    /// Inherited sockets (socket activation) arrive blocking; the loops need them non-blocking.
    public static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw SystemError(call: "fcntl O_NONBLOCK on descriptor \(fd)", code: errno)
        }
    }

    /// A connected non-blocking socket to `address`, waiting at most `timeout` seconds (for code that
    /// runs off the event loops: the TLS probe, the health check); the error says which part failed.
    public static func connect(to address: SocketAddress, timeout: Double) throws(SystemError) -> Int32 {
        let fd = try startConnect(to: address)
        switch connectProgress(fd, to: address) {
        case .connected:
            return fd
        case .failed(let code):
            SystemCall.close(fd)
            throw SystemError(call: "connect \(address)", code: code)
        case .inProgress:
            break
        }
        switch Poll.wait(fd: fd, events: Int16(POLLOUT), timeout: timeout) {
        case .ready:
            let code = connectResult(fd)
            guard code == 0 else {
                SystemCall.close(fd)
                throw SystemError(call: "connect \(address)", code: code)
            }
            return fd
        case .timedOut:
            SystemCall.close(fd)
            throw SystemError(call: "connect \(address)", code: ETIMEDOUT)
        case .failed(let code):
            SystemCall.close(fd)
            throw SystemError(call: "poll", code: code)
        }
    }

    /// Closes with a reset instead of an orderly end (SO_LINGER 0): the peer sees an error, never
    /// an end of stream it could take for a complete message.
    public static func abort(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        SystemCall.close(fd)
    }
}
