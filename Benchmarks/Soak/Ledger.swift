import Foundation

/// What the soak sent and what came back, one entry per request (or per fault that leaves no
/// complete request). Every request carries `User-Agent: SoakClient/ID`, which the decision log
/// records, so each one is matched with its record at the end.
final class Ledger: @unchecked Sendable {
    /// One request, or one fault.
    struct Entry {
        var id: Int
        var kind: Kind
        /// Decision records this entry must produce: 1 for a complete request head, 0 for a head
        /// never finished (a client reset mid-head).
        var expectedRecords: Int
        /// Whether the id travels in the head (a head timeout logs a record with no User-Agent).
        var identified: Bool
        var sentAt: Double
        /// A status line (or, for a tunnel, the 200) reached the client.
        var answered = false
        var status: Int?
        /// The outcome was the one this kind expects (a 200 for a healthy origin, a 502 for an
        /// origin that resets, ...).
        var expected = false
        var latency: Double?
        var detail: String?
        /// Whether the daemon saw the whole head is unknown (a send failed part-way): 0 or 1 record.
        var uncertain = false
    }

    enum Kind: String, CaseIterable {
        // The load.
        case forward, forwardChunked, challenge, tunnel, tls12, tls13
        // The faults.
        case resetMidHead, resetMidTunnel, slowloris, halfCloseTunnel, halfCloseForward
        case originReset, originStall, originTruncate, tunnelOriginReset, lateResolver, burst

        /// Load whose latency and errors are sampled; faults are expected to fail in their own way.
        var isLoad: Bool { [.forward, .forwardChunked, .challenge, .tunnel, .tls12, .tls13].contains(self) }
    }

    private let lock = NSLock()
    private var entries: [Entry] = []
    private var nextID = 1
    private let start = Date()

    var elapsed: Double { Date().timeIntervalSince(start) }

    /// A new entry; returns its id (the one to put in the User-Agent).
    func open(_ kind: Kind, expectedRecords: Int = 1, identified: Bool = true) -> Int {
        lock.withLock {
            let id = nextID
            nextID += 1
            entries.append(Entry(id: id, kind: kind, expectedRecords: expectedRecords, identified: identified, sentAt: elapsed))
            return id
        }
    }

    /// Records how an entry ended.
    func close(_ id: Int, answered: Bool, status: Int? = nil, expected: Bool, latency: Double? = nil, detail: String? = nil) {
        lock.withLock {
            // Ids are handed out in order from 1, one per entry: the id is the place.
            let index = id - 1
            guard entries.indices.contains(index) else { return }
            entries[index].answered = answered
            entries[index].status = status
            entries[index].expected = expected
            entries[index].latency = latency
            entries[index].detail = detail
        }
    }

    /// A head that was never completed after all (the connection failed first): it expects no record.
    func withdraw(_ id: Int) {
        lock.withLock {
            let index = id - 1
            guard entries.indices.contains(index) else { return }
            entries[index].expectedRecords = 0
        }
    }

    /// The head may or may not have reached the daemon whole (a send that failed part-way).
    func markUncertain(_ id: Int) {
        lock.withLock {
            let index = id - 1
            guard entries.indices.contains(index) else { return }
            entries[index].uncertain = true
        }
    }

    var all: [Entry] { lock.withLock { entries } }

    /// Entries sent in [from, to) seconds of the run.
    func sent(from: Double, to: Double) -> [Entry] {
        lock.withLock { entries.filter { $0.sentAt >= from && $0.sentAt < to } }
    }

    static func userAgent(_ id: Int) -> String { "SoakClient/\(id)" }
}
