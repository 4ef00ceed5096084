import CAtsgateShims
import Glibc

/// A failed system call: which call, and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var code: Int32
    public var description: String { "\(call): \(String(cString: strerror(code)))" }
}

/// What a non-blocking read or write did.
enum IOOutcome: Equatable {
    case done(Int)
    case wouldBlock
    case endOfFile
}

/// System calls are wrapped once: EINTR is retried, EAGAIN is "would block", anything else throws.
enum SystemCall {
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOOutcome {
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

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
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
    static func splice(from source: Int32, to destination: Int32, length: Int) throws(SystemError) -> IOOutcome {
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

    static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard atsgate_pipe(&fds) == 0 else { throw SystemError(call: "pipe2", code: errno) }
        return (fds[0], fds[1])
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }
}
