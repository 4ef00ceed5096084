import CSystemd
import Glibc

/// Tells the service manager about the daemon's state (sd_notify(3)). Outside systemd, where
/// NOTIFY_SOCKET is unset, every call does nothing, so the daemon need not ask first.
public struct ServiceNotifier: Sendable {
    public init() {}

    /// A service manager listens for notifications (NOTIFY_SOCKET is set).
    public var isSupervised: Bool { getenv("NOTIFY_SOCKET") != nil }

    /// The watchdog timeout (WatchdogSec=) when the manager expects pings from this process, else nil.
    /// Ping with `watchdog()` at least twice per interval.
    public var watchdogInterval: Duration? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    /// Sends `KEY=value` assignments in one datagram, in order. A newline in a value would start a
    /// new assignment, so newlines become spaces.
    public func notify(_ assignments: [(String, String)]) throws {
        let state = Self.message(assignments)
        let result = sd_notify(0, state)
        if result < 0 {
            throw SystemdError.call("sd_notify", returned: result, context: assignments.map(\.0).joined(separator: ","))
        }
    }

    /// Startup (or a reload) is complete: READY=1, with a status line when given.
    public func ready(status: String? = nil) throws {
        try notify([("READY", "1")] + Self.statusAssignment(status))
    }

    /// A reload has begun: RELOADING=1 with MONOTONIC_USEC, which systemd 253+ requires with it.
    /// Send `ready(status:)` when the reload is done.
    public func reloading(status: String? = nil) throws {
        try notify([("RELOADING", "1"), ("MONOTONIC_USEC", String(Self.monotonicMicroseconds()))]
            + Self.statusAssignment(status))
    }

    /// Shutdown has begun: STOPPING=1.
    public func stopping(status: String? = nil) throws {
        try notify([("STOPPING", "1")] + Self.statusAssignment(status))
    }

    /// The one-line status `systemctl status` shows.
    public func status(_ text: String) throws {
        try notify(Self.statusAssignment(text))
    }

    /// The watchdog ping: WATCHDOG=1.
    public func watchdog() throws {
        try notify([("WATCHDOG", "1")])
    }

    /// Names another process of the service as its main process: MAINPID=, sent by the main process
    /// itself when it hands the service to the new binary it started. systemd takes it from the
    /// main process under NotifyAccess=main when `pid` is in the service's cgroup (a child is), then
    /// watches that process instead, takes notifications from it only, and ignores this one's exit.
    /// Follow it with `barrier(timeout:)` before exiting: a main process that exits before systemd
    /// read the datagram is taken for the service's end.
    public func mainPID(_ pid: Int32, status: String? = nil) throws {
        precondition(pid > 0, "MAINPID must name a process")
        try notify([("MAINPID", String(pid))] + Self.statusAssignment(status))
    }

    /// Waits until the service manager has processed every notification sent before (sd_notify_barrier:
    /// a BARRIER=1 datagram carrying a pipe that the manager closes once it got there), for at most
    /// `timeout`. Returns at once outside systemd. Throws on timeout.
    public func barrier(timeout: Duration) throws {
        let microseconds = UInt64(clamping: timeout.components.seconds) * 1_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000_000)
        let result = sd_notify_barrier(0, microseconds)
        if result < 0 { throw SystemdError.call("sd_notify_barrier", returned: result, context: "BARRIER") }
    }

    /// The datagram `notify` sends for `assignments`.
    public static func message(_ assignments: [(String, String)]) -> String {
        assignments.map { key, value in
            precondition(!key.isEmpty && !key.contains("=") && !key.contains(where: \.isNewline),
                         "sd_notify key '\(key)' must be a non-empty name without '=' or newlines")
            return "\(key)=\(singleLine(value))"
        }.joined(separator: "\n")
    }

    /// CLOCK_MONOTONIC in microseconds, the clock MONOTONIC_USEC is read against.
    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    private static func statusAssignment(_ status: String?) -> [(String, String)] {
        status.map { [("STATUS", $0)] } ?? []
    }

    private static func singleLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}
