import CAtsgateShims
import Glibc

/// Open descriptors sent to another process (or another end in this one) with their bytes, as
/// SCM_RIGHTS messages on a Unix SOCK_SEQPACKET socket: the way an upgrade hands listeners and live
/// connections to the new binary.
///
/// Why SEQPACKET, not a stream: a send is one record, delivered whole with the descriptors it
/// carries, or not at all. On a stream socket a send may go in part, its descriptors ride on
/// whichever byte went first, and a read may stop in the middle of a message; every reader would need
/// to reassemble frames and match descriptors to them. Here a message is the unit of the protocol.
///
/// Received descriptors are close-on-exec (MSG_CMSG_CLOEXEC), so a child started meanwhile never
/// inherits one. A descriptor sent is duplicated, not moved: the sender still holds its own until it
/// closes it, and the open file (a socket's queue, a pipe's bytes, O_NONBLOCK) is shared by both.
public enum DescriptorPassing {
    /// The most descriptors one message carries (the kernel's SCM_MAX_FD).
    public static let maximumDescriptors = Int(ATSGATE_MAX_PASSED_DESCRIPTORS)

    /// A connected pair, blocking and close-on-exec: one end for this process, one for a child (see
    /// `ChildProcess.spawn(inheriting:)`, which makes it the child's descriptor 3).
    public static func socketPair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard atsgate_seqpacket_pair(&fds) == 0 else { throw SystemError(call: "socketpair AF_UNIX SOCK_SEQPACKET", code: errno) }
        return (fds[0], fds[1])
    }

    /// Sends `bytes` (at least one: an empty message would read as the peer's end) with
    /// `descriptors` as one message. EINTR is retried; EAGAIN on a non-blocking socket whose buffer is
    /// full is `.wouldBlock` (nothing was sent); a message larger than the socket's send buffer is
    /// EMSGSIZE. `.done` always carries the whole count: a message is never sent in part.
    public static func send(_ socket: Int32, _ bytes: UnsafeRawBufferPointer, descriptors: [Int32] = [])
        throws(SystemError) -> IOOutcome
    {
        guard bytes.count > 0 else { throw SystemError(call: "sendmsg: a message needs at least one byte", code: EINVAL) }
        guard descriptors.count <= maximumDescriptors else {
            throw SystemError(call: "sendmsg: \(descriptors.count) descriptors, more than \(maximumDescriptors) in one message",
                              code: EINVAL)
        }
        while true {
            let n = descriptors.withUnsafeBufferPointer { fds in
                atsgate_send_descriptors(socket, bytes.baseAddress, bytes.count, fds.baseAddress, Int32(fds.count))
            }
            if n >= 0 {
                guard n == bytes.count else {
                    throw SystemError(call: "sendmsg sent \(n) of \(bytes.count) bytes (not a SOCK_SEQPACKET socket?)", code: EPROTO)
                }
                return .done(n)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: throw SystemError(call: "sendmsg", code: code)
            }
        }
    }

    /// What one receive got.
    public enum Received: Equatable, Sendable {
        /// A message of `count` bytes (in the buffer) with the descriptors it carried, now this
        /// process's to close.
        case message(count: Int, descriptors: [Int32])
        case wouldBlock
        /// The peer closed its end (or exited).
        case endOfFile
    }

    /// Receives one message into `buffer`, with at most `maximumDescriptors` descriptors. EINTR is
    /// retried, EAGAIN is `.wouldBlock`. A message that does not fit (MSG_TRUNC: its rest is lost) or
    /// carried more descriptors than asked for (MSG_CTRUNC: the kernel closed the rest, as it does
    /// when this process is out of descriptors) throws EMSGSIZE, after closing what did arrive: a
    /// part of a message is never handed on.
    public static func receive(_ socket: Int32, into buffer: UnsafeMutableRawBufferPointer,
                               maximumDescriptors capacity: Int = maximumDescriptors) throws(SystemError) -> Received
    {
        let capacity = min(max(0, capacity), maximumDescriptors)
        var fds = [Int32](repeating: -1, count: max(1, capacity))
        while true {
            var count: Int32 = 0
            var flags: Int32 = 0
            let n = fds.withUnsafeMutableBufferPointer { fds in
                atsgate_receive_descriptors(socket, buffer.baseAddress, buffer.count, fds.baseAddress, Int32(capacity),
                                            &count, &flags)
            }
            if n < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN: return .wouldBlock
                case let code: throw SystemError(call: "recvmsg", code: code)
                }
            }
            let received = Array(fds[..<Int(count)])
            if flags & Int32(MSG_TRUNC) != 0 {
                for fd in received { SystemCall.close(fd) }
                throw SystemError(call: "recvmsg: a message longer than \(buffer.count) bytes (MSG_TRUNC)", code: EMSGSIZE)
            }
            if flags & Int32(MSG_CTRUNC) != 0 {
                for fd in received { SystemCall.close(fd) }
                throw SystemError(call: "recvmsg: descriptors lost: more than \(capacity) in one message, "
                                      + "or this process is out of descriptors (MSG_CTRUNC)", code: EMSGSIZE)
            }
            if n == 0 && received.isEmpty { return .endOfFile }
            return .message(count: n, descriptors: received)
        }
    }

    // MARK: named sockets

    /// Listens on a named Unix SEQPACKET socket: `@name` is in the abstract namespace (no file, gone
    /// with the socket; visible to the network namespace), anything else a path (the caller removes
    /// a stale file first). Blocking and close-on-exec.
    public static func listen(at name: String, backlog: Int32 = 16) throws(SystemError) -> Int32 {
        let fd = atsgate_seqpacket_socket()
        guard fd >= 0 else { throw SystemError(call: "socket AF_UNIX SOCK_SEQPACKET", code: errno) }
        let bound = try withUnixAddress(name) { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "bind \(name)", code: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "listen \(name)", code: code)
        }
        return fd
    }

    /// Connects to a named Unix SEQPACKET socket (`@name` abstract, else a path); blocking.
    public static func connect(to name: String) throws(SystemError) -> Int32 {
        let fd = atsgate_seqpacket_socket()
        guard fd >= 0 else { throw SystemError(call: "socket AF_UNIX SOCK_SEQPACKET", code: errno) }
        while true {
            let result = try withUnixAddress(name) { Glibc.connect(fd, $0, $1) }
            if result == 0 { return fd }
            if errno == EINTR { continue }
            let code = errno
            SystemCall.close(fd)
            throw SystemError(call: "connect \(name)", code: code)
        }
    }

    /// accept4(2) on a named socket from `listen(at:)`: close-on-exec, and non-blocking only if the
    /// caller makes it so. Nil when nothing waits on a non-blocking listener.
    public static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        while true {
            let client = atsgate_accept_cloexec(fd)
            if client >= 0 { return client }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN: return nil
            case let code: throw SystemError(call: "accept", code: code)
            }
        }
    }

    /// The credentials of the process at the other end of a connected Unix socket (SO_PEERCRED), as
    /// they were when it connected: who may ask a daemon for something over its socket.
    public static func peerCredentials(_ fd: Int32) throws(SystemError) -> (pid: Int32, uid: UInt32, gid: UInt32) {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        guard atsgate_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
            throw SystemError(call: "getsockopt SO_PEERCRED", code: errno)
        }
        return (pid, uid, gid)
    }

    private static func withUnixAddress(_ name: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32)
        throws(SystemError) -> Int32
    {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        // An abstract name is a leading NUL and then exactly its bytes (no terminator); a path is
        // NUL-terminated.
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count > (abstract ? 1 : 0), bytes.count < capacity, abstract || !bytes.contains(0) else {
            throw SystemError(call: "Unix socket name '\(name)' (1 to \(capacity - 1) bytes)", code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let length = socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
