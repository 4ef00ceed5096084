import Dispatch
import Foundation
import Glibc
import EventLoops
import POSIX

/// Sends one structured entry (journald's sd_journal_sendv, wired in by the executable): a
/// human-readable message, a syslog priority, and upper-case fields. A throw counts the record as
/// lost (or kept for another try, under `--log-overflow pause`).
public typealias StructuredLogWriter = @Sendable (_ message: String, _ priority: Int32, _ fields: [(String, String)]) throws -> Void

/// Where decision records go: standard output, a file (`--log-file`, reopened on SIGUSR1) or the
/// journal. Shared by every loop and every configuration generation. The loops never write: they
/// hand their batches to this sink's own writer thread through a buffer bounded in bytes
/// (`--log-buffer`); what does not fit is dropped and counted, or holds the proxy back
/// (`--log-overflow`). Losses are said on stderr at most once a second, and in the log itself by a
/// `log-overflow` record.
public final class LogSink: @unchecked Sendable {
    package let structured: StructuredLogWriter?
    private let writer: LogWriter
    private let warnings: DispatchSourceTimer

    /// 16 MiB: several seconds of records at the proxy's full rate, for a reader that pauses.
    public static let defaultCapacity = 16 << 20

    /// The size at which a loop hands its batch over: 16 KiB, or a quarter of a smaller --log-buffer,
    /// so that what the buffer holds stays within the bound the operator set (a 16 KiB batch into a
    /// 4 KiB buffer read as 16,951 bytes buffered).
    package var handOverSize: Int { min(LogBatch.handOverSize, writer.capacity / 4) }

    /// Records to `fd` (standard output by default), or journal entries to `structured` when the
    /// log's format is journal. `format` is the overflow record's (default: journal with a
    /// structured writer, else JSON); `warn` gets the operator's one-line warnings.
    public init(fd: Int32 = STDOUT_FILENO, structured: StructuredLogWriter? = nil, format: LogFormat? = nil,
                overflow: LogOverflow = .drop, capacity: Int = LogSink.defaultCapacity,
                warn: @escaping @Sendable (String) -> Void = LogSink.standardError) {
        self.structured = structured
        writer = LogWriter(output: LogOutput(fd: fd, structured: structured),
                           format: format ?? (structured == nil ? .json : .journal),
                           capacity: capacity, overflow: overflow, warn: warn)
        warnings = LogSink.warnEverySecond(writer, warn)
    }

    /// Records appended to the file at `path` (created when missing); throws when it cannot be opened.
    public init(file path: String, format: LogFormat, overflow: LogOverflow = .drop,
                capacity: Int = LogSink.defaultCapacity,
                warn: @escaping @Sendable (String) -> Void = LogSink.standardError) throws(SystemError) {
        structured = nil
        writer = LogWriter(output: try LogOutput(path: path), format: format, capacity: capacity,
                           overflow: overflow, warn: warn)
        warnings = LogSink.warnEverySecond(writer, warn)
    }

    deinit {
        warnings.cancel()
        writer.shutDown()
    }

    /// Hands a loop's batch over: afterwards it is empty, unless the log is full under
    /// `--log-overflow pause` (the loop keeps it and offers it again). `force` takes it whatever the
    /// bound (a stop).
    package func offer(_ batch: inout LogBatch, force: Bool = false) {
        guard !batch.isEmpty else { return }
        writer.offer(&batch, force: force)
    }

    /// `--log-overflow pause` and the buffer is full: no new connection or request until it drains.
    package var isPaused: Bool { writer.paused.load(ordering: .relaxed) }

    /// Opens the log file again (SIGUSR1, after logrotate moved it); nothing for other outputs.
    public func reopen() {
        writer.requestReopen()
    }

    /// Another process writes to the same output from now on (`true`), or no longer: an upgrade's
    /// old and new process share their standard output while both run, and a pipe then gets whole
    /// lines in writes of at most PIPE_BUF bytes, which the kernel never interleaves.
    public func setSharedOutput(_ shared: Bool) {
        writer.output.shared.store(shared, ordering: .relaxed)
    }

    /// Waits up to `seconds` for the writer to write what it was handed; returns how many records
    /// are still unwritten. `closing` (the daemon stops): the last record then says how many were
    /// lost since the start, if any were, and then, when `stop` says how the run ended, the
    /// `run-stop` (docs/decision-log-ledger.md).
    @discardableResult
    public func drain(within seconds: Double, closing: Bool = false, stop: RunStop? = nil) -> Int {
        writer.drain(until: monotonic() + seconds, closing: closing, stop: stop)
    }

    /// Starts this process's run in the log: the `run-start` goes before any record handed over
    /// after this call, then the writer adds a `run-checkpoint` every `start.checkpointSeconds`
    /// (none for 0) with what it wrote so far and what `status` says (called on the writer's
    /// thread: it must not block). Once per sink; a sink without a run writes no ledger records.
    public func startRun(_ start: RunStart, status: @escaping @Sendable () -> RunStatus) {
        startRun(start, status: status, clock: monotonic)
    }

    /// `startRun` with the checkpoints on `clock` (monotonic seconds): a test moves it, then calls
    /// `drain`, which waits for the checkpoint that became due.
    package func startRun(_ start: RunStart, status: @escaping @Sendable () -> RunStatus,
                          clock: @escaping @Sendable () -> Double) {
        writer.startRun(start, status: status, clock: clock)
    }

    public var state: LogState { writer.state }

    /// One line on standard error, "atsgate: " first, as the daemon's other messages.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data("atsgate: \(line)\n".utf8))
    }

    /// At most one warning a second about losses and pauses, from a queue of its own (standard
    /// error may be as slow as the log).
    private static func warnEverySecond(_ writer: LogWriter, _ warn: @escaping @Sendable (String) -> Void) -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "atsgate.log.warnings"))
        var last = writer.state
        timer.setEventHandler {
            let now = writer.state
            defer { last = now }
            if now.droppedTotal > last.droppedTotal {
                warn("decision log: \(now.droppedTotal - last.droppedTotal) records dropped "
                     + "(\(now.droppedTotal) since the start): \(now.cause); "
                     + "a log-overflow record will count them once \(now.output) accepts writes again")
            }
            if now.pauses > last.pauses {
                let why = now.failure.map { "(\($0))" } ?? "(its reader is not keeping up)"
                warn("decision log: full \(why): new connections and requests wait until it drains "
                     + "(--log-overflow pause)" + (now.paused ? "" : "; it has drained"))
            } else if last.paused, !now.paused {
                warn("decision log: drained; accepting and reading requests again")
            }
        }
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(100))
        timer.resume()
        return timer
    }
}
