import Foundation
import ProxyCore

/// The most recent decision records, numbered, for the live page: it shows them at once when it
/// loads, and its event stream (`/events`) sends each one after the last it sent. Every loop adds
/// here as it logs; the admin listener reads. A record is kept as the value it is (rendering it to
/// JSON is the reader's work), so a loop pays one short lock per record.
public final class LiveFeed: DecisionObserver, @unchecked Sendable {
    struct Entry {
        var sequence: Int
        var record: LogRecord
        var policy: String
    }

    static let capacity = 500
    private let lock = NSLock()
    private var ring: [Entry] = []
    private var start = 0
    private var last = 0

    public init() {}

    package func observe(_ record: LogRecord, policy: String) {
        lock.lock()
        defer { lock.unlock() }
        last += 1
        let entry = Entry(sequence: last, record: record, policy: policy)
        if ring.count < LiveFeed.capacity {
            ring.append(entry)
        } else {
            ring[start] = entry
            start = (start + 1) % LiveFeed.capacity
        }
    }

    /// The number of the newest record (0 before any).
    var lastSequence: Int {
        lock.lock()
        defer { lock.unlock() }
        return last
    }

    /// The kept records numbered after `sequence`, oldest first.
    func entries(after sequence: Int) -> [Entry] {
        lock.lock()
        defer { lock.unlock() }
        guard last > sequence else { return [] }
        let wanted = min(last - sequence, ring.count)
        return (0..<wanted).map { offset in
            ring[(start + ring.count - wanted + offset) % ring.count]
        }
    }
}
