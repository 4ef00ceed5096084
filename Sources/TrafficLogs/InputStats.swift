/// Line counts per input, so a report says what it read and what it skipped.
public struct InputStats: Sendable {
    /// A decision log (JSON lines) or a HAR capture (its `log.entries`).
    public enum Kind: String, Sendable {
        case log, har
    }

    public var path: String
    public var kind = Kind.log
    /// Lines of a log, entries of a HAR.
    public var lines = 0
    public var records = 0
    /// Lines that are not JSON objects, or are cut short (a start-up banner, a truncated last line).
    public var notRecords = 0
    /// JSON objects without the fields of a decision (`time` and `action`), or with a time that is not
    /// one; HAR entries without `startedDateTime` or `request.url`, or whose URL is no http(s) load.
    public var missingFields = 0
    /// Skipped lines or entries by why (`no request.url`: 3), so each kind of gap is named.
    public var skipped: [String: Int] = [:]
    /// The first skipped line's (or entry's) number and why, for the message.
    public var firstSkipped: (line: Int, why: String)?
    /// A HAR's `log.creator` (`mitmproxy 11.0.2`).
    public var creator: String?
    /// `log-overflow` records: the proxy could not write every decision, and said how many it lost.
    public var overflowRecords = 0
    /// Decisions the proxy made but could not log (the sum of the `log-overflow` records' `dropped`).
    public var dropped = 0
    /// Records of the run ledger (`run-start`, `run-checkpoint`, `run-stop`): the log's, not decisions.
    public var ledgerRecords = 0

    public init(path: String, kind: Kind = .log) {
        self.path = path
        self.kind = kind
    }

    /// `line` or `entry`, for messages.
    public var unit: String { kind == .har ? "entry" : "line" }
    public var units: String { kind == .har ? "entries" : "lines" }

    /// Another part's counts of the same input (a file read in parallel), whose numbering starts
    /// `linesBefore` later.
    package mutating func add(_ other: InputStats, linesBefore: Int) {
        if firstSkipped == nil, let first = other.firstSkipped { firstSkipped = (first.line + linesBefore, first.why) }
        lines += other.lines
        records += other.records
        notRecords += other.notRecords
        missingFields += other.missingFields
        skipped.merge(other.skipped, uniquingKeysWith: +)
        overflowRecords += other.overflowRecords
        dropped += other.dropped
        ledgerRecords += other.ledgerRecords
        if creator == nil { creator = other.creator }
    }
}
