import DecisionLog
import Foundation
import ProxyCore
import Synchronization

/// The most recent decision records, numbered, and the totals of every record so far, for the live
/// page: it shows them at once when it loads, and its event stream (`/events`) sends each record
/// after the last it sent. Every loop adds here as it logs; the admin listener reads. A record is
/// kept as the value it is (rendering it to JSON is the reader's work), so a loop pays one short
/// lock per record.
///
/// The totals are counted here, under the same lock as the numbering, rather than summed from the
/// loops' counters: each loop's copy is read at a different moment, so a sum can already include a
/// record numbered after the snapshot's `through` (which the page then counts twice) or miss one
/// numbered before it. Here `through` and the totals always describe the same records.
public final class LiveFeed: DecisionObserver, @unchecked Sendable {
    struct Entry {
        var sequence: Int
        var record: DecisionRecord
        var policy: String
    }

    /// Records kept: four seconds at 500 decisions/s, two at 1,000/s, longer than an event stream
    /// waits between two reads (`AdminExchange.pumpInterval`) below 8,000/s. A reader that falls
    /// further behind is told the totals instead (`Read.gap`).
    static let capacity = 2048
    private let lock = NSLock()
    private var ring: [Entry] = []
    private var start = 0
    private var last = 0
    private var totals = LoopMetrics()
    /// Set while an upgrade's new process serves the admin window: the streams here end.
    let streamsEnded = Atomic<Bool>(false)

    public init() {}

    package func observe(_ record: DecisionRecord, policy: String) {
        lock.lock()
        defer { lock.unlock() }
        last += 1
        totals.count(record)
        let entry = Entry(sequence: last, record: record, policy: policy)
        if ring.count < LiveFeed.capacity {
            ring.append(entry)
        } else {
            ring[start] = entry
            start = (start + 1) % LiveFeed.capacity
        }
    }

    /// The totals of every record up to `through`, and the newest `recent` kept records.
    struct Snapshot {
        var totals: LoopMetrics
        var through: Int
        var entries: [Entry]
    }

    func snapshot(recent: Int) -> Snapshot {
        lock.lock()
        defer { lock.unlock() }
        return Snapshot(totals: totals, through: last, entries: kept(after: max(0, last - recent)))
    }

    /// What a reader that has every record up to `sequence` gets next.
    enum Read {
        /// The kept records numbered after it, oldest first (none when it is up to date).
        case records([Entry])
        /// Some records after it are no longer kept: the totals through the newest one instead, so
        /// the reader's counts stay right, and how many records it will never see. Also when it
        /// names a record this feed has not numbered yet (it followed a daemon that was restarted):
        /// then nothing is skipped, but its totals are another daemon's.
        case gap(Snapshot, skipped: Int)
    }

    func read(after sequence: Int) -> Read {
        lock.lock()
        defer { lock.unlock() }
        let oldest = last - ring.count + 1
        if sequence + 1 < oldest || sequence > last {
            return .gap(Snapshot(totals: totals, through: last, entries: []), skipped: max(0, last - sequence))
        }
        return .records(kept(after: sequence))
    }

    /// The kept records numbered after `sequence`, oldest first; under the lock.
    private func kept(after sequence: Int) -> [Entry] {
        guard last > sequence else { return [] }
        let wanted = min(last - sequence, ring.count)
        return (0..<wanted).map { offset in
            ring[(start + ring.count - wanted + offset) % ring.count]
        }
    }
}
