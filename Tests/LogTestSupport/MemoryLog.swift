import Foundation
import DecisionLog

/// A decision log that records in memory: a `LogSink` whose structured writer keeps each record's
/// fields, so an in-process proxy's behaviour is asserted without parsing its standard output. Use
/// it with `logFormat = .journal`: fields are named as journald gets them (`ATS_ACTION`, ...).
/// `stall()` makes it a journald that stopped reading: every entry waits until `resume()`.
public final class MemoryLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [[String: String]] = []
    private let gate = NSCondition()
    private var stalled = false

    public init() {}

    /// The sink to give `ProxyServer`.
    public var sink: LogSink { sink() }

    /// A sink with the log's overflow rule and bound.
    public func sink(overflow: LogOverflow = .drop, capacity: Int = LogSink.defaultCapacity) -> LogSink {
        LogSink(structured: { [self] _, _, fields in
            gate.withLock { while stalled { gate.wait() } }
            let record = Dictionary(fields, uniquingKeysWith: { first, _ in first })
            lock.withLock { entries.append(record) }
        }, overflow: overflow, capacity: capacity, warn: { _ in })
    }

    /// From now on each entry waits (the sink's writer thread with it) until `resume`.
    public func stall() { gate.withLock { stalled = true } }

    public func resume() {
        gate.withLock {
            stalled = false
            gate.broadcast()
        }
    }

    /// The records so far, fields without their `ATS_` prefix, lowercased (`action`, `reason`, ...).
    public var records: [[String: String]] {
        lock.withLock {
            entries.map { entry in
                Dictionary(entry.map { (String($0.key.dropFirst(4)).lowercased(), $0.value) },
                           uniquingKeysWith: { first, _ in first })
            }
        }
    }

    /// Waits (bounded) until `count` records are in.
    public func wait(for count: Int, timeout: TimeInterval = 10) -> [[String: String]] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = records
            if current.count >= count { return current }
            usleep(10_000)
        }
        return records
    }
}
