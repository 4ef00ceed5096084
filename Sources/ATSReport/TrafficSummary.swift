import ATSPolicy

/// The action a record logged. Logs grow: an action this version does not know (today's `close`) is
/// counted as `other`, never as a block.
public enum LoggedAction: Int, CaseIterable, Sendable {
    case allow, block, upgrade, error, other

    public var name: String {
        switch self {
        case .allow: "allow"
        case .block: "block"
        case .upgrade: "upgrade"
        case .error: "error"
        case .other: "other"
        }
    }

    init(_ bytes: UnsafeRawBufferPointer) {
        func equals(_ text: StaticString) -> Bool {
            bytes.count == text.utf8CodeUnitCount && memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
        }
        if bytes.isEmpty { self = .other } else if equals("allow") { self = .allow } else if equals("block") { self = .block }
        else if equals("upgrade") { self = .upgrade } else if equals("error") { self = .error } else { self = .other }
    }
}

/// One TLS handshake outcome seen for a destination: the version and suite names as logged.
public struct Handshake: Hashable, Sendable {
    public var version: String
    public var cipher: String?
}

/// What the logs recorded for one destination (scheme, host, port) of one app.
public struct DestinationTraffic: Sendable {
    public var app: String
    public var scheme: String
    public var host: String
    public var port: Int
    public var records = 0
    /// Records per `LoggedAction.rawValue`.
    public var actions = [Int](repeating: 0, count: LoggedAction.allCases.count)
    /// Records per reason code (any code, known or not).
    public var reasons: [String: Int] = [:]
    /// Milliseconds since the epoch.
    public var firstTime = Int64.max
    public var lastTime = Int64.min
    public var handshakes: Set<Handshake> = []
    /// The exception keys the logs name (`builtin:apple.com` for a built-in).
    public var exceptions: Set<String> = []
    /// Certificate findings, refused (`certificate-*` reasons) or tolerated (`cert_tolerated`).
    public var certificateFindings: Set<String> = []
    /// Blocks logged with `enforced:false` (report mode: the load went through).
    public var reportOnlyBlocks = 0
    /// The message of the first block, as logged.
    public var blockMessage: String?

    public var tlsVersions: [String] { Set(handshakes.map(\.version)).sorted() }
    public var ciphers: [String] { Set(handshakes.compactMap(\.cipher)).sorted() }
    public var url: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    public func count(_ action: LoggedAction) -> Int { actions[action.rawValue] }
}

/// Per-minute decision counts, for the chart of decisions over time.
public struct TimeBuckets: Sendable {
    /// Minute since the epoch -> records per `LoggedAction.rawValue`.
    public var minutes: [Int64: [Int]] = [:]

    mutating func add(time: Int64, action: LoggedAction) {
        let minute = time >= 0 ? time / 60_000 : (time - 59_999) / 60_000
        minutes[minute, default: [Int](repeating: 0, count: LoggedAction.allCases.count)][action.rawValue] += 1
    }
}

/// Line counts per input, so a report says what it read and what it skipped.
public struct InputStats: Sendable {
    public var path: String
    public var lines = 0
    public var records = 0
    /// Lines that are not JSON objects, or are cut short (a start-up banner, a truncated last line).
    public var notRecords = 0
    /// JSON objects without the fields of a decision (`time` and `action`), or with a time that is not one.
    public var missingFields = 0
    /// The first skipped line's number and why, for the message.
    public var firstSkipped: (line: Int, why: String)?
}

/// Everything the logs said, grouped by app and destination. Memory follows the number of distinct
/// destinations (and minutes), not the number of records; the order records arrive in does not
/// matter, so logs of several proxies merge whatever their order.
public struct TrafficSummary: Sendable {
    public private(set) var destinations: [DestinationTraffic] = []
    public private(set) var inputs: [InputStats] = []
    public private(set) var buckets = TimeBuckets()
    /// Records of the proxy's own answers that name no destination (bad requests, timeouts), per app.
    public private(set) var undirected: [String: [String: Int]] = [:]

    public var records: Int { inputs.reduce(0) { $0 + $1.records } }
    public var apps: [String] { Array(Set(destinations.map(\.app))).sorted() }

    public init() {}

    /// Reads every line of `paths` (files, directories, `-`, `.gz`).
    public static func read(_ paths: [String]) throws(LogReadError) -> TrafficSummary {
        var builder = TrafficSummaryBuilder()
        let reader = LogReader()
        for path in try reader.expand(paths) {
            builder.begin(path: path)
            try reader.read(path) { builder.ingest($0) }
        }
        return builder.finish()
    }

    fileprivate init(destinations: [DestinationTraffic], inputs: [InputStats], buckets: TimeBuckets,
                     undirected: [String: [String: Int]]) {
        self.destinations = destinations
        self.inputs = inputs
        self.buckets = buckets
        self.undirected = undirected
    }
}

/// Builds a `TrafficSummary` line by line; the hot path of `atsgate report`.
public struct TrafficSummaryBuilder {
    private struct Key: Hashable {
        var app: Int32
        var scheme: Int32
        var host: Int32
        var port: Int32
    }

    private let scanner = RecordScanner()
    private var strings = Interner()
    private var index: [Key: Int] = [:]
    private var destinations: [DestinationTraffic] = []
    /// Per destination: interned reason ids with counts, merged into `reasons` at the end.
    private var reasonCounts: [[(id: Int, count: Int)]] = []
    private var handshakeIDs: [[(version: Int, cipher: Int)]] = []
    private var exceptionIDs: [[Int]] = []
    private var inputs: [InputStats] = []
    private var buckets = TimeBuckets()
    private var undirected: [String: [String: Int]] = [:]
    private let none = -1

    public init() {}

    public mutating func begin(path: String) {
        inputs.append(InputStats(path: path))
    }

    /// One line of a log.
    public mutating func ingest(_ line: UnsafeRawBufferPointer) {
        if inputs.isEmpty { begin(path: "-") }
        let input = inputs.count - 1
        inputs[input].lines += 1
        // Blank lines are nobody's records and no one's problem.
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
        switch scanner.scan(line) {
        case .notARecord:
            skip(input, why: "not a JSON object", notRecord: true)
        case .missingFields(let names):
            skip(input, why: "no \(names.joined(separator: ", "))", notRecord: false)
        case .record(let fields):
            guard let time = Timestamp.milliseconds(span(fields.time, line)) else {
                return skip(input, why: "time is not an RFC 3339 UTC timestamp", notRecord: false)
            }
            inputs[input].records += 1
            add(fields, time: time, line: line)
        }
    }

    private mutating func skip(_ input: Int, why: String, notRecord: Bool) {
        if notRecord { inputs[input].notRecords += 1 } else { inputs[input].missingFields += 1 }
        if inputs[input].firstSkipped == nil { inputs[input].firstSkipped = (inputs[input].lines, why) }
    }

    private func span(_ span: RecordScanner.Span, _ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: line[span.start..<(span.start + span.count)])
    }

    private mutating func intern(_ field: RecordScanner.Span, _ line: UnsafeRawBufferPointer) -> Int {
        guard field.isPresent else { return none }
        if field.escaped { return strings.id(RecordScanner.string(field, in: line)) }
        return strings.id(span(field, line))
    }

    private mutating func add(_ fields: RecordScanner.Fields, time: Int64, line: UnsafeRawBufferPointer) {
        let action = LoggedAction(span(fields.action, line))
        buckets.add(time: time, action: action)
        // One app's records or many: `app` once the device-lab routing logs it, else the policy file.
        let app = fields.app.isPresent ? intern(fields.app, line) : intern(fields.policy, line)
        guard fields.hasDestination else {
            let appName = app == none ? "-" : strings[app]
            let reason = fields.reason.isPresent ? RecordScanner.string(fields.reason, in: line) : action.name
            undirected[appName, default: [:]][reason, default: 0] += 1
            return
        }
        let key = Key(app: Int32(app), scheme: Int32(intern(fields.scheme, line)), host: Int32(intern(fields.host, line)),
                      port: Int32(fields.port))
        let slot: Int
        if let existing = index[key] {
            slot = existing
        } else {
            slot = destinations.count
            index[key] = slot
            destinations.append(DestinationTraffic(app: app == none ? "-" : strings[app], scheme: strings[Int(key.scheme)],
                                                   host: strings[Int(key.host)], port: fields.port))
            reasonCounts.append([])
            handshakeIDs.append([])
            exceptionIDs.append([])
        }
        destinations[slot].records += 1
        destinations[slot].actions[action.rawValue] += 1
        if time < destinations[slot].firstTime { destinations[slot].firstTime = time }
        if time > destinations[slot].lastTime { destinations[slot].lastTime = time }

        if fields.reason.isPresent {
            let reason = intern(fields.reason, line)
            if let at = reasonCounts[slot].firstIndex(where: { $0.id == reason }) {
                reasonCounts[slot][at].count += 1
            } else {
                reasonCounts[slot].append((reason, 1))
            }
            if action == .block {
                if fields.enforced == false { destinations[slot].reportOnlyBlocks += 1 }
                if destinations[slot].blockMessage == nil, fields.message.isPresent {
                    destinations[slot].blockMessage = RecordScanner.string(fields.message, in: line)
                }
            }
            let text = strings[reason]
            if text.hasPrefix("certificate-") { destinations[slot].certificateFindings.insert(text) }
        }
        if fields.tlsVersion.isPresent {
            let pair = (version: intern(fields.tlsVersion, line), cipher: intern(fields.cipher, line))
            if !handshakeIDs[slot].contains(where: { $0 == pair }) { handshakeIDs[slot].append(pair) }
        }
        if fields.exception.isPresent {
            let exception = intern(fields.exception, line)
            if !exceptionIDs[slot].contains(exception) { exceptionIDs[slot].append(exception) }
        }
        for finding in fields.certTolerated {
            destinations[slot].certificateFindings.insert(RecordScanner.string(finding, in: line))
        }
    }

    public func finish() -> TrafficSummary {
        var result = destinations
        for slot in result.indices {
            for (id, count) in reasonCounts[slot] { result[slot].reasons[strings[id], default: 0] += count }
            for pair in handshakeIDs[slot] {
                result[slot].handshakes.insert(Handshake(version: strings[pair.version],
                                                         cipher: pair.cipher == none ? nil : strings[pair.cipher]))
            }
            for id in exceptionIDs[slot] { result[slot].exceptions.insert(strings[id]) }
        }
        result.sort { ($0.app, $0.host, $0.port, $0.scheme) < ($1.app, $1.host, $1.port, $1.scheme) }
        return TrafficSummary(destinations: result, inputs: inputs, buckets: buckets, undirected: undirected)
    }
}

import Glibc
