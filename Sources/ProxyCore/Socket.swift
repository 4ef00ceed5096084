import CAtsgateShims
import Glibc

/// Non-blocking TCP sockets: listening and connecting. Descriptors are returned to the caller to own.
enum Socket {
    static func listen(on address: SocketAddress, backlog: Int32 = 4096) throws(SystemError) -> Int32 {
        let fd = atsgate_socket(address.family, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { throw SystemError(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setNoDelay(fd)
        if !address.ip.isIPv4 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
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
    static func startConnect(to address: SocketAddress) throws(SystemError) -> Int32 {
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
    static func connectResult(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }

    enum ConnectProgress: Equatable {
        case connected
        case inProgress
        case failed(Int32)
    }

    /// Where a non-blocking connect stands, asked without waiting by calling connect(2) again: 0 (or
    /// EISCONN) once established, EALREADY while the handshake runs, else the connection's error. On
    /// loopback and fast LANs the handshake is usually done by the time the first connect(2) returns,
    /// and this one call replaces a poll(2) and a getsockopt(SO_ERROR).
    static func connectProgress(_ fd: Int32, to address: SocketAddress) -> ConnectProgress {
        guard address.withSockAddr({ Glibc.connect(fd, $0, $1) }) != 0 else { return .connected }
        switch errno {
        case EISCONN: return .connected
        case EALREADY, EINPROGRESS, EINTR: return .inProgress
        case let code: return .failed(code)
        }
    }

    static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return ok == 0 ? SocketAddress(storage: storage) : nil
    }

    /// TCP_NODELAY; set on a listening socket, every accepted socket inherits it.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Inherited sockets (socket activation) arrive blocking; the loops need them non-blocking.
    static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw SystemError(call: "fcntl O_NONBLOCK on descriptor \(fd)", code: errno)
        }
    }
}
