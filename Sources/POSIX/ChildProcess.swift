import CAtsgateShims
import Glibc

/// A process this one started (posix_spawn), watched through a pidfd: the new binary of an upgrade,
/// which may fail to start, exit early or hang, and must then be told apart and reaped.
///
/// The child gets descriptors 0-2 and the ones it is told to inherit (as 3, 4, ...), nothing else,
/// whatever this process forgot to make close-on-exec; every signal at its default and none blocked
/// (this process ignores the ones Dispatch handles, and an ignored signal stays ignored across exec).
///
/// The owner reaps the child (`exitStatus()` or `wait(timeout:)`): one never waited for stays a zombie
/// until this process exits. Its methods are meant for one queue at a time (the upgrade's), which is
/// why the class is only unchecked Sendable: it may be handed to that queue, not shared.
public final class ChildProcess: @unchecked Sendable {
    public let pid: Int32
    /// Readable (POLLIN) once the child has exited: for a poll or a loop's epoll set. -1 when the
    /// kernel has no pidfd_open (before 5.3); the methods then fall back to the PID.
    public let pidFD: Int32
    private var reaped: ExitStatus?

    /// How a child ended.
    public enum ExitStatus: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// From a wait status (the WIFEXITED / WTERMSIG macros, which Swift cannot import).
        init(waitStatus status: Int32) {
            self = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    private init(pid: Int32, pidFD: Int32) {
        self.pid = pid
        self.pidFD = pidFD
    }

    deinit {
        if pidFD >= 0 { SystemCall.close(pidFD) }
    }

    /// Starts `executable` (a path; no PATH search) with `arguments` (argv, the first being the
    /// program's name) and exactly `environment` ("NAME=value" entries). `inheriting[i]` becomes the
    /// child's descriptor 3 + i. Throws when the exec itself fails (no such file, not executable, not
    /// an executable format: a truncated binary is ENOEXEC), with the path in the error.
    public static func spawn(executable: String, arguments: [String], environment: [String],
                             inheriting: [Int32] = []) throws(SystemError) -> ChildProcess
    {
        var pid: pid_t = 0
        let result = withCStrings(arguments) { argv in
            withCStrings(environment) { envp in
                inheriting.withUnsafeBufferPointer { fds in
                    atsgate_spawn(&pid, executable, argv, envp, fds.baseAddress, Int32(fds.count))
                }
            }
        }
        guard result == 0 else { throw SystemError(call: "posix_spawn \(executable)", code: result) }
        return ChildProcess(pid: pid, pidFD: atsgate_pidfd_open(pid))
    }

    /// How the child ended, reaping it, or nil while it runs (waitpid WNOHANG). Once reaped, the
    /// same answer every time.
    public func exitStatus() throws(SystemError) -> ExitStatus? {
        if let reaped { return reaped }
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                reaped = ExitStatus(waitStatus: status)
                return reaped
            }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            throw SystemError(call: "waitpid \(pid)", code: errno)
        }
    }

    /// Waits up to `timeout` seconds for the child to end and reaps it; nil if it still runs then.
    public func wait(timeout: Double) throws(SystemError) -> ExitStatus? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while true {
            if let status = try exitStatus() { return status }
            if pidFD >= 0 {
                switch Poll.wait(fd: pidFD, events: Int16(POLLIN), until: deadline) {
                case .ready: continue
                case .timedOut: return try exitStatus()
                case .failed(let code): throw SystemError(call: "poll pidfd of \(pid)", code: code)
                }
            }
            // No pidfd: look again every 10 ms.
            if ContinuousClock.now >= deadline { return try exitStatus() }
            usleep(10_000)
        }
    }

    /// Sends `signal` to the child, and only to it: through the pidfd, a PID reused after the child
    /// was reaped is never hit. Does nothing once the child is reaped.
    public func signal(_ signal: Int32) throws(SystemError) {
        guard reaped == nil else { return }
        let result = pidFD >= 0 ? atsgate_pidfd_send_signal(pidFD, signal) : kill(pid, signal)
        // ESRCH: it has exited and waits to be reaped.
        guard result == 0 || errno == ESRCH else { throw SystemError(call: "kill \(pid)", code: errno) }
    }
}

/// Calls `body` with a NULL-terminated array of C strings, valid only inside it.
private func withCStrings<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result) -> Result {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
