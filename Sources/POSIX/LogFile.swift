import Glibc

/// The system calls of an append-only log: a file opened with O_APPEND (so every write lands at its
/// end, even after another process appended or logrotate truncated it), written with write(2) (not
/// send: it may also be a pipe or a terminal), and a torn last line cut off after a failed write.
public enum LogFile {
    /// Opens (creating, mode 0640) `path` for appending, close-on-exec.
    public static func open(_ path: String) throws(SystemError) -> Int32 {
        while true {
            let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            if fd >= 0 { return fd }
            if errno != EINTR { throw SystemError(call: "open \(path)", code: errno) }
        }
    }

    /// One write(2): EINTR retried, EAGAIN (a descriptor someone made non-blocking) is "would block".
    public static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOOutcome {
        while true {
            let n = Glibc.write(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return .done(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .wouldBlock
            case let code: throw SystemError(call: "write", code: code)
            }
        }
    }

    /// Removes the last `count` bytes of a regular file (half a line a full disk left behind). False
    /// when `fd` is not a regular file or the file cannot be cut.
    public static func cutTail(_ fd: Int32, count: Int) -> Bool {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size >= count else { return false }
        while ftruncate(fd, status.st_size - off_t(count)) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }
}
