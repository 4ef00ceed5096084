import Foundation
import ProxyCore

/// A decision log that records in memory: a `LogSink` whose structured writer keeps each record's
/// fields, so an in-process proxy's behaviour is asserted without parsing its standard output. Use
/// it with `logFormat = .journal`: fields are named as journald gets them (`ATS_ACTION`, ...).
public final class MemoryLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [[String: String]] = []

    public init() {}

    /// The sink to give `ProxyServer`.
    public var sink: LogSink {
        LogSink(structured: { [self] _, _, fields in
            let record = Dictionary(fields, uniquingKeysWith: { first, _ in first })
            lock.withLock { entries.append(record) }
        })
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
