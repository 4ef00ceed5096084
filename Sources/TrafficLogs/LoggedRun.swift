import Foundation

/// One run of the daemon (one process start) as the logs show it: every record carries its `run`,
/// and the run ledger's records (docs/decision-log-ledger.md) say when it started, what it had
/// written and how many connections were open at each checkpoint, and how it stopped. Records of
/// one run may be spread over several files (a rotated log) and over the parts of a file read in
/// parallel: runs merge by id, whatever the order they were read in.
public struct LoggedRun: Sendable {
    /// The other process of an upgrade, as a `run-start` or a `run-stop` names it.
    public struct Peer: Sendable, Equatable {
        public var run: String
        public var pid: Int?
        public var version: String?
    }

    /// A `run-checkpoint`'s counts: decision records written before it, lost, connections open.
    public struct Checkpoint: Sendable {
        public var time: Int64
        public var records: Int
        public var dropped: Int
        public var open: Int
    }

    /// The `run-stop`: `stop` is `signal` or `upgrade`; `open`, the connections cut at the stop.
    public struct Stop: Sendable {
        public var time: Int64
        public var stop: String
        public var records: Int
        public var dropped: Int
        public var open: Int
        public var successor: Peer?
        public var handedOver: Int?
    }

    public var id: String
    /// From any of its ledger records.
    public var pid: Int?
    public var version: String?
    /// The `run-start`'s time (milliseconds since the epoch), when the logs hold it.
    public var start: Int64?
    public var checkpointSeconds: Int?
    public var predecessor: Peer?
    /// The latest `run-checkpoint`, and how many the logs hold.
    public var lastCheckpoint: Checkpoint?
    public var checkpoints = 0
    public var stop: Stop?
    /// Decision records of this run read from the logs.
    public var decisions = 0
    /// The first and last time of any of its records (the log of the run ends at `lastTime`).
    public var firstTime = Int64.max
    public var lastTime = Int64.min
    /// The inputs its records came from, in the order read.
    public var inputs: [String] = []

    public init(id: String) {
        self.id = id
    }

    /// The run has ledger records in these logs (not only decisions that name it).
    public var hasLedger: Bool { start != nil || checkpoints > 0 || stop != nil }

    /// A record of the run at `time` (milliseconds), read from `input`.
    mutating func saw(_ time: Int64, in input: String) {
        if time < firstTime { firstTime = time }
        if time > lastTime { lastTime = time }
        appears(in: input)
    }

    mutating func appears(in input: String) {
        if inputs.last != input, !inputs.contains(input) { inputs.append(input) }
    }

    /// The same run as read elsewhere (another file, another part of this one).
    mutating func merge(_ other: LoggedRun) {
        pid = pid ?? other.pid
        version = version ?? other.version
        if let theirs = other.start, start.map({ theirs < $0 }) ?? true {
            start = theirs
            checkpointSeconds = other.checkpointSeconds
            predecessor = other.predecessor
        }
        if let theirs = other.lastCheckpoint, (lastCheckpoint.map { theirs.time >= $0.time } ?? true) { lastCheckpoint = theirs }
        checkpoints += other.checkpoints
        if stop == nil { stop = other.stop }
        decisions += other.decisions
        firstTime = min(firstTime, other.firstTime)
        lastTime = max(lastTime, other.lastTime)
        for input in other.inputs where !inputs.contains(input) { inputs.append(input) }
    }

    /// Reads a ledger record (a rare line: Foundation's parser is fast enough for it); false when
    /// it is not one this reader understands (then the line is skipped as having missing fields).
    mutating func read(ledger line: UnsafeRawBufferPointer, time: Int64) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
              let kind = object["ledger"] as? String else { return false }
        func int(_ key: String) -> Int? { (object[key] as? NSNumber).map(\.intValue) }
        func peer(_ prefix: String) -> Peer? {
            (object[prefix + "_run"] as? String).map { Peer(run: $0, pid: int(prefix + "_pid"), version: object[prefix + "_version"] as? String) }
        }
        switch kind {
        case "run-start":
            if start == nil || time < start! {
                start = time
                checkpointSeconds = int("checkpoint_s")
                predecessor = peer("predecessor")
            }
        case "run-checkpoint":
            checkpoints += 1
            let checkpoint = Checkpoint(time: time, records: int("records") ?? 0, dropped: int("dropped") ?? 0,
                                        open: int("open") ?? 0)
            if lastCheckpoint.map({ time >= $0.time }) ?? true { lastCheckpoint = checkpoint }
        case "run-stop":
            stop = Stop(time: time, stop: object["stop"] as? String ?? "signal", records: int("records") ?? 0,
                        dropped: int("dropped") ?? 0, open: int("open") ?? 0, successor: peer("successor"),
                        handedOver: int("handed_over"))
        default:
            return false
        }
        pid = pid ?? int("pid")
        version = version ?? object["version"] as? String
        return true
    }
}
