import CAtsgateShims
import Glibc

/// A failed system call: which call, and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var code: Int32
    public var description: String { "\(call): \(String(cString: strerror(code)))" }

    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }
}

/// What a non-blocking read or write did.
public enum IOOutcome: Equatable, Sendable {
    case done(Int)
    case wouldBlock
    case endOfFile
}

/// System calls are wrapped once, for the proxy, the TLS probe and the health check alike (the shape
/// of swift-nio's NIOPosix/System.swift): EINTR is retried, EAGAIN is "would block", anything else
/// throws with the call's name.
public enum SystemCall {
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOOutcome {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .done(n) }
            if n == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: throw SystemError(call: "read", code: code)
            }
        }
    }

    public static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        while true {
            let n = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: throw SystemError(call: "send", code: code)
            }
        }
    }

    /// Moves up to `length` bytes between descriptors without copying through user space.
    public static func splice(from source: Int32, to destination: Int32, length: Int) throws(SystemError) -> IOOutcome {
        while true {
            let n = atsgate_splice(source, destination, length)
            if n > 0 { return .done(n) }
            if n == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: throw SystemError(call: "splice", code: code)
            }
        }
    }

    public static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard atsgate_pipe(&fds) == 0 else { throw SystemError(call: "pipe2", code: errno) }
        return (fds[0], fds[1])
    }

    /// Bytes waiting to be read (FIONREAD): what a pipe holds, or a socket's unread input. A relay's
    /// pipe keeps its bytes when its descriptor moves to another process; this says how many.
    public static func readableBytes(_ fd: Int32) throws(SystemError) -> Int {
        let count = atsgate_readable_bytes(fd)
        guard count >= 0 else { throw SystemError(call: "ioctl FIONREAD", code: errno) }
        return Int(count)
    }

    public static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    /// accept4(2), non-blocking and close-on-exec: the new descriptor and its peer, nil when nothing
    /// is waiting; a connection the peer aborted meanwhile is skipped.
    public static func accept(_ fd: Int32) throws(SystemError) -> (fd: Int32, peer: SocketAddress?)? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { atsgate_accept(fd, $0, &length) }
            }
            if client >= 0 { return (client, SocketAddress(storage: storage)) }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN: return nil
            case let code: throw SystemError(call: "accept", code: code)
            }
        }
    }

    /// eventfd(2), non-blocking and close-on-exec.
    public static func eventFD() throws(SystemError) -> Int32 {
        let fd = atsgate_eventfd()
        guard fd >= 0 else { throw SystemError(call: "eventfd", code: errno) }
        return fd
    }

    /// Adds one to an eventfd's counter (from any thread).
    public static func signal(eventFD fd: Int32) {
        var one: UInt64 = 1
        while Glibc.write(fd, &one, MemoryLayout<UInt64>.size) < 0, errno == EINTR {}
    }

    /// Reads and resets an eventfd's counter.
    public static func drain(eventFD fd: Int32) {
        var count: UInt64 = 0
        while Glibc.read(fd, &count, MemoryLayout<UInt64>.size) < 0, errno == EINTR {}
    }
}
