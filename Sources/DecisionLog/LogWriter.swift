import EventLoops
import Foundation
import Synchronization

/// The thread that writes one log's records (one per sink: standard output, a file, the journal).
/// The loops hand it their batches through a `LogBuffer`, under a lock held only to append; the
/// blocking writes happen here, so a reader that stops reading, a full disk or a journald that falls
/// behind stalls this thread and nothing else. It also writes the overflow record once the output
/// accepts writes again, reopens the file when asked (SIGUSR1), and writes the run ledger's records
/// (LedgerRecord): a checkpoint counts what this thread has actually written before it.
package final class LogWriter: @unchecked Sendable {
    /// Guards the buffer; the thread and `drain` wait on it (so every change is broadcast: a signal
    /// could wake a drainer instead of the thread).
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var buffer: LogBuffer
    private var reopenRequested = false
    private var shuttingDown = false
    /// The daemon is stopping: once everything is written, the last record says what was lost, if
    /// anything was (`closingRecordWritten` once it has).
    private var closing = false
    private var closingRecordWritten = false
    /// The run ledger, once the daemon has started its run.
    private var ledger: Ledger?
    /// Decision records written in this run (not those lost, nor overflow or ledger records).
    private var written = 0
    /// The thread is writing what it took (`drain` waits for it).
    private var busy = false
    /// `buffer.paused`, readable without the lock: the loops check it before each request head.
    package let paused = Atomic<Bool>(false)
    /// `buffer.capacity`, readable without the lock (it never changes).
    package let capacity: Int
    /// Touched by the thread only (and by `init`), but for its `shared` flag.
    package let output: LogOutput
    private let format: LogFormat
    private let warn: @Sendable (String) -> Void

    package init(output: LogOutput, format: LogFormat, capacity: Int, overflow: LogOverflow,
         warn: @escaping @Sendable (String) -> Void) {
        self.output = output
        self.format = format
        self.warn = warn
        self.capacity = capacity
        buffer = LogBuffer(capacity: capacity, overflow: overflow)
        let thread = Thread { [self] in run() }
        thread.name = "atsgate.log"
        thread.start()
    }

    /// A loop's batch (see `LogBuffer.offer`). Never blocks beyond the lock.
    @discardableResult
    package func offer(_ batch: inout LogBatch, force: Bool = false) -> LogBuffer.Offer {
        condition.lock()
        defer { condition.unlock() }
        let outcome = buffer.offer(&batch, force: force)
        if outcome == .taken { condition.broadcast() }
        publishPaused()
        return outcome
    }

    package func requestReopen() {
        condition.lock()
        reopenRequested = true
        condition.broadcast()
        condition.unlock()
    }

    /// Starts the run ledger: the thread writes the `run-start` before any decision record handed over
    /// after this call, then a checkpoint every `start.checkpointSeconds` on `clock` (monotonic
    /// seconds; a test moves it), asking `status` for the connections open. Once per writer.
    package func startRun(_ start: RunStart, status: @escaping @Sendable () -> RunStatus,
                          clock: @escaping @Sendable () -> Double) {
        condition.lock()
        defer { condition.unlock() }
        guard ledger == nil else { return }
        ledger = Ledger(start: start, status: status, clock: clock,
                        nextCheckpoint: clock() + Double(start.checkpointSeconds))
        condition.broadcast()
    }

    /// Waits until everything handed over has been written (or lost and counted, with its overflow
    /// record tried) and the ledger's records that are due, or until `deadline` (monotonic seconds);
    /// returns the records still unwritten. `closing` (the daemon stops): the last records are then
    /// an overflow record when any were lost, and the `run-stop` when `stop` says how the run ended
    /// (without one, as after a second SIGTERM that cut connections unlogged, the run stays open).
    package func drain(until deadline: Double, closing: Bool = false, stop: RunStop? = nil) -> Int {
        condition.lock()
        defer { condition.unlock() }
        if closing {
            self.closing = true
            if let stop, ledger?.stop == nil { ledger?.stop = stop }
        }
        // Also a nudge: the thread looks at the ledger's clock again (a test moved it).
        condition.broadcast()
        while buffer.records > 0 || busy || closingRecordDue || ledgerDue(failing: false) {
            let left = deadline - monotonic()
            if left <= 0 { break }
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(left, 1)))
        }
        return buffer.records
    }

    /// Ends the thread once it has finished its current write (the sink is going away).
    package func shutDown() {
        condition.lock()
        shuttingDown = true
        condition.broadcast()
        condition.unlock()
    }

    /// The buffer's counts, for metrics, health and warnings.
    package var state: LogState {
        condition.lock()
        defer { condition.unlock() }
        return LogState(bufferedBytes: buffer.bytes, capacity: buffer.capacity, overflow: buffer.overflow,
                        droppedTotal: buffer.droppedTotal, cause: buffer.cause, failure: buffer.failure,
                        paused: buffer.paused, pauses: buffer.pauses, output: output.name)
    }

    /// Under the lock.
    private var closingRecordDue: Bool { closing && !closingRecordWritten && buffer.droppedTotal > 0 }

    /// The ledger's state, kept under the lock.
    private struct Ledger {
        let start: RunStart
        let status: @Sendable () -> RunStatus
        let clock: @Sendable () -> Double
        var startWritten = false
        /// When the next checkpoint is due, on `clock`.
        var nextCheckpoint: Double
        var stop: RunStop?
        var stopWritten = false

        var checkpointDue: Bool {
            startWritten && !stopWritten && start.checkpointSeconds > 0 && clock() >= nextCheckpoint
        }
    }

    /// Under the lock: the run-stop goes last, once everything else is written.
    private var stopDue: Bool {
        guard let ledger, ledger.stop != nil, !ledger.stopWritten else { return false }
        return ledger.startWritten && buffer.records == 0 && !closingRecordDue
    }

    /// Under the lock: a ledger record the thread should write now.
    private func ledgerDue(failing: Bool) -> Bool {
        guard let ledger else { return false }
        return !ledger.startWritten || ledger.checkpointDue || (stopDue && !failing)
    }

    /// Under the lock.
    private func publishPaused() {
        if paused.load(ordering: .relaxed) != buffer.paused { paused.store(buffer.paused, ordering: .relaxed) }
    }

    // MARK: the thread

    private func run() {
        /// Taken from the buffer and not yet written, in order (after a failure under `pause`, kept
        /// for the next try).
        var held: [LogBatch] = []
        var failing = false
        condition.lock()
        while true {
            if buffer.waiting.isEmpty, !reopenRequested, !shuttingDown, !(closingRecordDue && !failing),
               !ledgerDue(failing: failing) {
                // Retry a failed write, or the overflow record, on the next batch or in a second; wake
                // for the next checkpoint.
                var timeout: Double? = failing || buffer.unreported > 0 || closingRecordDue || stopDue ? 1 : nil
                if let ledger, ledger.start.checkpointSeconds > 0, !ledger.stopWritten {
                    timeout = min(timeout ?? .infinity, max(0.001, ledger.nextCheckpoint - ledger.clock()))
                }
                if let timeout {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: timeout))
                } else {
                    condition.wait()
                }
            }
            if shuttingDown { break }
            held += buffer.take()
            let reopen = reopenRequested
            reopenRequested = false
            busy = true
            condition.unlock()

            if reopen, let problem = output.reopen() { warn(problem) }
            writeRunStart()
            failing = !write(&held) || !reportLosses()
            writeCheckpoint()
            if !failing { failing = !writeRunStop() }

            condition.lock()
            busy = false
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Writes the held batches in order; false when a write failed under `pause` (the rest is kept).
    private func write(_ held: inout [LogBatch]) -> Bool {
        while !held.isEmpty {
            let size = held[0].size
            let records = held[0].records
            let problem = output.write(&held[0])
            condition.lock()
            buffer.failure = problem
            written += records - held[0].records
            if problem != nil, buffer.overflow == .pause {
                // Nothing is lost: what was written is released, the rest waits for the next try.
                buffer.release(bytes: size - held[0].size, records: records - held[0].records)
                publishPaused()
                condition.unlock()
                return false
            }
            if let problem { buffer.lose(held[0].records, cause: problem) }
            buffer.release(bytes: size, records: records)
            buffer.recycle(&held[0].lines)
            publishPaused()
            condition.unlock()
            held.removeFirst()
        }
        return true
    }

    /// Writes the overflow record when records were lost since the last one, and when the daemon
    /// stops after any were lost (then it is the last record, even with nothing new to count).
    private func reportLosses() -> Bool {
        condition.lock()
        let unreported = buffer.unreported
        let total = buffer.droppedTotal
        let cause = buffer.cause
        // Nothing is left to write (the thread holds nothing when it gets here).
        let last = closingRecordDue && buffer.records == 0
        // Stopping with records still to write: one record after them says it all.
        let deferred = closing && buffer.records > 0
        condition.unlock()
        guard unreported > 0 || last, !deferred else { return true }
        var record = LogOverflowRecord(time: wallClock(), dropped: unreported, droppedTotal: total, cause: cause)
            .batch(format: format, structured: output.structured != nil)
        let problem = output.write(&record)
        condition.lock()
        if problem == nil {
            buffer.reported(unreported)
            if last { closingRecordWritten = true }
        }
        buffer.failure = problem
        condition.unlock()
        return problem == nil
    }

    // MARK: the run ledger

    /// The `run-start`, once, before the run's first decision record. A failed write is not tried
    /// again: the report then finds the run without its start, which it notes.
    private func writeRunStart() {
        condition.lock()
        guard var ledger, !ledger.startWritten else { return condition.unlock() }
        ledger.startWritten = true
        self.ledger = ledger
        condition.unlock()
        _ = writeLedger(LedgerRecord(time: wallClock(), version: ledger.start.version, event: .start(ledger.start)))
    }

    /// A `run-checkpoint` when one is due, counting what was written before it. One that cannot be
    /// written is skipped: the next one says the same and more.
    private func writeCheckpoint() {
        condition.lock()
        guard var ledger, ledger.checkpointDue else { return condition.unlock() }
        let now = ledger.clock()
        let interval = Double(ledger.start.checkpointSeconds)
        ledger.nextCheckpoint += interval
        // After a long stall, one checkpoint and the next a full interval later, not a burst.
        if ledger.nextCheckpoint <= now { ledger.nextCheckpoint = now + interval }
        self.ledger = ledger
        let records = written
        let dropped = buffer.droppedTotal
        condition.unlock()
        let event = LedgerRecord.Event.checkpoint(records: records, dropped: dropped, ledger.status())
        _ = writeLedger(LedgerRecord(time: wallClock(), version: ledger.start.version, event: event))
    }

    /// The `run-stop`, last of all, when the daemon stops cleanly; false while it cannot be written
    /// (tried again each second until the stop's deadline).
    private func writeRunStop() -> Bool {
        condition.lock()
        guard stopDue, let ledger, let stop = ledger.stop else {
            condition.unlock()
            return true
        }
        let event = LedgerRecord.Event.stop(records: written, dropped: buffer.droppedTotal, stop)
        condition.unlock()
        let problem = writeLedger(LedgerRecord(time: wallClock(), version: ledger.start.version, event: event))
        condition.lock()
        if problem == nil { self.ledger?.stopWritten = true }
        condition.unlock()
        return problem == nil
    }

    private func writeLedger(_ record: LedgerRecord) -> String? {
        var batch = record.batch(format: format, structured: output.structured != nil)
        return output.write(&batch)
    }
}

/// What the log holds and has lost, as /metrics, /healthz, /readyz and the warnings tell it.
public struct LogState: Sendable {
    public var bufferedBytes: Int
    public var capacity: Int
    public var overflow: LogOverflow
    /// Decision records lost since the start.
    public var droppedTotal: Int
    /// Why records were last lost.
    public var cause: String
    /// Why the last write failed, while writes fail.
    public var failure: String?
    /// `pause`: new connections and requests wait for the log to drain.
    public var paused: Bool
    /// How many times that began.
    public var pauses: Int
    /// Where the records go ("standard output", the file's path).
    public var output: String

    public init(bufferedBytes: Int, capacity: Int, overflow: LogOverflow, droppedTotal: Int, cause: String,
                failure: String?, paused: Bool, pauses: Int, output: String) {
        self.bufferedBytes = bufferedBytes
        self.capacity = capacity
        self.overflow = overflow
        self.droppedTotal = droppedTotal
        self.cause = cause
        self.failure = failure
        self.paused = paused
        self.pauses = pauses
        self.output = output
    }
}
