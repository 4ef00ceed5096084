import ATSPolicy
import Glibc

/// Builds a `TrafficSummary` line by line; the hot path of `atsgate report`.
///
/// Per record: one scan of the line, one hash of the destination's bytes (app, scheme, host, port) to
/// find its slot, and a hash per reason, suite or exception seen. Values are interned once and counted
/// in flat tables keyed by small numbers, so no String and no nested array is touched per record.
public struct TrafficSummaryBuilder {
    private let scanner = RecordScanner()
    /// Values (reasons, versions, suites, exceptions, apps) by id.
    private var strings = Interner()
    /// Destination keys (`app NUL scheme NUL host NUL port`); a key's id is its slot in `destinations`.
    private var keys = Interner()
    private var keyBuffer: [UInt8] = []
    private var destinations: [DestinationTraffic] = []
    /// (slot, reason id) -> records.
    private var reasonCounts: [Pair: Int] = [:]
    /// (slot, device id) -> records.
    private var deviceCounts: [Pair: Int] = [:]
    /// (slot, version id << 32 | cipher id + 1, or 0 for none).
    private var handshakes: Set<Pair> = []
    /// (slot, exception id).
    private var exceptions: Set<Pair> = []
    /// (slot, (group id + 1, or 0 for none) << 2 | pq_offered: 0 false, 1 true, 2 unknown).
    private var keyExchanges: Set<Pair> = []
    /// A HAR's entries: the app they are counted under, and the record each is written into for the
    /// same path as a log's line.
    private var harApp: [UInt8] = []
    private var scratch: [UInt8] = []
    /// `_securityDetails` seen so far (their fields joined by NUL), and what each means in the log's words.
    private var securityKeys = Interner()
    private var securityKey: [UInt8] = []
    private var securityNames: [(version: String?, suite: String?, group: String?)] = []

    /// A destination's slot and an interned value: one hash per record and field, no nested arrays.
    private struct Pair: Hashable {
        package var slot: Int
        package var value: Int
    }
    /// Per reason id: a certificate finding (`certificate-*`).
    private var isCertificateReason: [Bool] = []
    /// Per reason id: the client's refusal of the server (`client-refused-certificate`).
    private var isClientRefusal: [Bool] = []
    /// Per interned User-Agent: its load context's bit (0 until classified).
    private var contextBitOf: [UInt8] = []
    private var lastUserAgent: [UInt8] = []
    private var lastUserAgentBit: UInt8 = 1
    private var inputs: [InputStats] = []
    private var buckets = TimeBuckets()
    private var undirected: [String: [String: Int]] = [:]
    /// (app id, device id) -> transparent records and the destination ids they named; device ids seen
    /// on the proxy path.
    private var transparent: [Pair: (records: Int, destinations: Set<Int>)] = [:]
    private var proxyDevices: Set<Int> = []
    /// The daemon runs the records name (the run ledger), by id; the last one's bytes and slot, since
    /// a log holds long stretches of one run.
    private var runs: [LoggedRun] = []
    private var runSlots: [String: Int] = [:]
    private var lastRun: [UInt8] = []
    private var lastRunSlot = -1

    public init() {}

    public mutating func begin(path: String) {
        inputs.append(InputStats(path: path))
        lastRunSlot = -1
    }

    /// Starts a HAR input whose entries are `app`'s.
    package mutating func beginHAR(path: String, app: String) {
        inputs.append(InputStats(path: path, kind: .har))
        harApp = Array(app.utf8)
    }

    package mutating func setCreator(_ creator: String?) {
        if !inputs.isEmpty { inputs[inputs.count - 1].creator = creator }
    }

    /// One line of a log.
    public mutating func ingest(_ line: UnsafeRawBufferPointer) {
        if inputs.isEmpty { begin(path: "-") }
        let input = inputs.count - 1
        inputs[input].lines += 1
        var fields = RecordScanner.Fields()
        switch scanner.scan(line, into: &fields) {
        case .notARecord:
            // Blank lines are nobody's records and no one's problem.
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
            skip(input, why: "not a JSON object", notRecord: true)
        case .missingFields:
            skip(input, why: "no \(fields.missing.joined(separator: ", "))", notRecord: false)
        case .ledger:
            // Not a decision: the log's own account of its run.
            guard let time = Timestamp.milliseconds(span(fields.time, line)) else {
                return skip(input, why: "time is not an RFC 3339 UTC timestamp", notRecord: false)
            }
            var record = LoggedRun(id: fields.run.isPresent ? RecordScanner.string(fields.run, in: line) : "")
            guard fields.run.isPresent, record.read(ledger: line, time: time) else {
                return skip(input, why: "a ledger record without run, or of an unknown kind", notRecord: false)
            }
            inputs[input].ledgerRecords += 1
            record.saw(time, in: inputs[input].path)
            let slot = runSlot(fields.run, line, input: input)
            runs[slot].merge(record)
        case .record:
            guard let time = Timestamp.milliseconds(span(fields.time, line)) else {
                return skip(input, why: "time is not an RFC 3339 UTC timestamp", notRecord: false)
            }
            let overflow = fields.dropped >= 0 && isLogOverflow(fields, line)
            if fields.run.isPresent {
                let slot = runSlot(fields.run, line, input: input)
                if time < runs[slot].firstTime { runs[slot].firstTime = time }
                if time > runs[slot].lastTime { runs[slot].lastTime = time }
                if !overflow { runs[slot].decisions += 1 }
            }
            if overflow {
                // Not a decision: the proxy saying how many it could not write.
                inputs[input].overflowRecords += 1
                inputs[input].dropped += fields.dropped
                return
            }
            inputs[input].records += 1
            add(fields, time: time, line: line)
        }
    }

    /// The slot of the run `field` names, made on its first record; the current input is added to
    /// the run's when the run changes.
    private mutating func runSlot(_ field: RecordScanner.Span, _ line: UnsafeRawBufferPointer, input: Int) -> Int {
        let bytes = span(field, line)
        if lastRunSlot >= 0, !field.escaped, bytes.count == lastRun.count,
           lastRun.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            return lastRunSlot
        }
        let id = RecordScanner.string(field, in: line)
        let slot: Int
        if let known = runSlots[id] {
            slot = known
        } else {
            slot = runs.count
            runSlots[id] = slot
            runs.append(LoggedRun(id: id))
        }
        runs[slot].appears(in: inputs[input].path)
        lastRun = Array(bytes)
        lastRunSlot = slot
        return slot
    }

    /// The proxy's `log-overflow` record (action `error`, reason `log-overflow`).
    private func isLogOverflow(_ fields: RecordScanner.Fields, _ line: UnsafeRawBufferPointer) -> Bool {
        fields.reason.isPresent && !fields.reason.escaped && span(fields.reason, line).elementsEqual("log-overflow".utf8)
            && LoggedAction(span(fields.action, line)) == .error
    }

    /// One entry of a HAR: written as the record a proxy would have logged for the load (scheme, host,
    /// port, time, the TLS version and suite when the capture has them, action `captured`, the error
    /// as the reason), then counted exactly as a log's line.
    package mutating func ingest(entry: HAREntry) {
        let input = inputs.count - 1
        inputs[input].lines += 1
        if entry.notAnObject { return skip(input, why: "not a JSON object", notRecord: true) }
        guard entry.hasStarted else { return skip(input, why: "no startedDateTime", notRecord: false) }
        guard entry.hasURL else { return skip(input, why: "no request.url", notRecord: false) }
        guard let time = entry.started.withUnsafeBytes({ Timestamp.milliseconds($0) }) else {
            return skip(input, why: "startedDateTime is not an ISO 8601 time", notRecord: false)
        }
        let destination: URLDestination
        switch URLDestination.parse(entry.url) {
        case .success(let parsed): destination = parsed
        case .failure(.notHTTP(let scheme)): return skip(input, why: "not an http(s) load (\(scheme):)", notRecord: false)
        case .failure(.malformed(let why)): return skip(input, why: "request.url: \(why)", notRecord: false)
        }
        let scheme = destination.secure ? "https" : "http"
        inputs[input].records += 1
        var line = scratch
        scratch = []
        line.removeAll(keepingCapacity: true)
        var fields = RecordScanner.Fields()
        func put(_ bytes: some Collection<UInt8>) -> RecordScanner.Span {
            let start = line.count
            line.append(contentsOf: bytes)
            return RecordScanner.Span(start: start, count: line.count - start, escaped: false)
        }
        fields.app = put(harApp)
        fields.scheme = put(scheme.utf8)
        // Lowercased as the proxy logs hosts (ASCII: a URL's host is punycode).
        fields.host = put(entry.url[destination.host].lazy.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 })
        fields.port = destination.port
        fields.action = put("captured".utf8)
        if !entry.error.isEmpty {
            let error = String(decoding: entry.error, as: UTF8.self)
            fields.reason = put((error.hasPrefix("net::") ? error : "capture-error").utf8)
        }
        if destination.secure, !entry.tlsProtocol.isEmpty {
            let security = security(entry)
            if let version = security.version {
                fields.tlsVersion = put(version.utf8)
                if let suite = security.suite { fields.cipher = put(suite.utf8) }
                if let group = security.group {
                    fields.keyExchange = put(group.utf8)
                    fields.keyExchangeLogged = true
                }
            }
        }
        line.withUnsafeBytes { add(fields, time: time, line: $0) }
        scratch = line
    }

    /// The log's names for an entry's `_securityDetails`, worked out once per distinct combination (a
    /// capture has a handful).
    private mutating func security(_ entry: HAREntry) -> (version: String?, suite: String?, group: String?) {
        securityKey.removeAll(keepingCapacity: true)
        securityKey.append(contentsOf: entry.tlsProtocol)
        securityKey.append(0)
        securityKey.append(contentsOf: entry.cipher)
        securityKey.append(0)
        securityKey.append(contentsOf: entry.keyExchange)
        securityKey.append(0)
        securityKey.append(contentsOf: entry.mac)
        securityKey.append(0)
        securityKey.append(contentsOf: entry.keyExchangeGroup)
        let id = securityKey.withUnsafeBytes { securityKeys.id($0) }
        if id < securityNames.count { return securityNames[id] }
        let version = HARSecurity.tlsVersion(String(decoding: entry.tlsProtocol, as: UTF8.self))
        let suite = HARSecurity.suite(cipher: String(decoding: entry.cipher, as: UTF8.self),
                                      keyExchange: String(decoding: entry.keyExchange, as: UTF8.self),
                                      mac: String(decoding: entry.mac, as: UTF8.self), version: version)
        let group = entry.keyExchangeGroup.isEmpty ? nil : HARSecurity.group(String(decoding: entry.keyExchangeGroup, as: UTF8.self))
        securityNames.append((version, suite, group))
        return (version, suite, group)
    }

    private mutating func skip(_ input: Int, why: String, notRecord: Bool) {
        if notRecord { inputs[input].notRecords += 1 } else { inputs[input].missingFields += 1 }
        inputs[input].skipped[why, default: 0] += 1
        if inputs[input].firstSkipped == nil { inputs[input].firstSkipped = (inputs[input].lines, why) }
    }

    private func span(_ span: RecordScanner.Span, _ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: line[span.start..<(span.start + span.count)])
    }

    private mutating func intern(_ field: RecordScanner.Span, _ line: UnsafeRawBufferPointer) -> Int {
        if field.escaped { return strings.id(RecordScanner.string(field, in: line)) }
        return strings.id(span(field, line))
    }

    /// Appends a field's decoded bytes to the key.
    private mutating func appendKey(_ field: RecordScanner.Span, _ line: UnsafeRawBufferPointer) {
        if field.isPresent {
            if field.escaped {
                keyBuffer.append(contentsOf: RecordScanner.string(field, in: line).utf8)
            } else {
                keyBuffer.append(contentsOf: span(field, line))
            }
        }
        keyBuffer.append(0)
    }

    private mutating func add(_ fields: RecordScanner.Fields, time: Int64, line: UnsafeRawBufferPointer) {
        let action = LoggedAction(span(fields.action, line))
        buckets.add(time: time, action: action)
        // One app's records or many: `app` once the device-lab routing logs it, else the policy file.
        let app = fields.app.isPresent ? fields.app : fields.policy
        if fields.path.isPresent { count(path: fields, app: app, line) }
        guard fields.hasDestination else {
            let appName = app.isPresent ? RecordScanner.string(app, in: line) : "-"
            let reason = fields.reason.isPresent ? RecordScanner.string(fields.reason, in: line) : action.name
            undirected[appName, default: [:]][reason, default: 0] += 1
            return
        }
        keyBuffer.removeAll(keepingCapacity: true)
        appendKey(app, line)
        appendKey(fields.scheme, line)
        appendKey(fields.host, line)
        keyBuffer.append(UInt8(truncatingIfNeeded: fields.port >> 8))
        keyBuffer.append(UInt8(truncatingIfNeeded: fields.port))
        let slot = keyBuffer.withUnsafeBytes { keys.id($0) }
        if slot == destinations.count {
            destinations.append(DestinationTraffic(
                app: app.isPresent ? RecordScanner.string(app, in: line) : "-",
                scheme: RecordScanner.string(fields.scheme, in: line),
                host: RecordScanner.string(fields.host, in: line), port: fields.port))
        }
        // Values first (interning mutates the builder), then one in-place update of the destination.
        let reason = fields.reason.isPresent ? intern(fields.reason, line) : -1
        let handshake = fields.tlsVersion.isPresent
            ? intern(fields.tlsVersion, line) << 32 | (fields.cipher.isPresent ? intern(fields.cipher, line) + 1 : 0) : -1
        let exception = fields.exception.isPresent ? intern(fields.exception, line) : -1
        let bit = contextBit(fields.userAgent, line)
        if reason >= 0 {
            while isCertificateReason.count <= reason {
                let code = strings[isCertificateReason.count]
                isCertificateReason.append(code.hasPrefix("certificate-"))
                isClientRefusal.append(code == DestinationTraffic.clientRefusalReason)
            }
        }
        let update = TrafficSummaryBuilder.update(&destinations[slot], action: action, time: time, contextBit: bit,
                                                  reason: reason, handshake: handshake, exception: exception)
        if let flushed = update.flushedReason { reasonCounts[Pair(slot: slot, value: flushed.id), default: 0] += flushed.count }
        if update.newHandshake { handshakes.insert(Pair(slot: slot, value: handshake)) }
        if update.newException { exceptions.insert(Pair(slot: slot, value: exception)) }
        if reason >= 0 {
            if isCertificateReason[reason] { destinations[slot].certificateFindings.insert(strings[reason]) }
            if action == .block {
                if fields.enforced == false { destinations[slot].reportOnlyBlocks += 1 }
                if destinations[slot].blockMessage == nil, fields.message.isPresent {
                    destinations[slot].blockMessage = RecordScanner.string(fields.message, in: line)
                }
            }
        }
        if fields.device.isPresent { count(device: intern(fields.device, line), slot: slot) }
        if fields.bytesUp > 0 { destinations[slot].bytesUp += fields.bytesUp }
        if fields.bytesDown > 0 { destinations[slot].bytesDown += fields.bytesDown }
        if reason >= 0, isClientRefusal[reason] {
            // Rare (a refusal per failed load): counted on the destination directly.
            let alert = fields.clientAlert.isPresent ? RecordScanner.string(fields.clientAlert, in: line) : "encrypted"
            destinations[slot].clientRefusals[alert, default: 0] += 1
        }
        for finding in fields.certTolerated {
            destinations[slot].certificateFindings.insert(RecordScanner.string(finding, in: line))
        }
        // A null group counts only for a handshake (TLS 1.2 without (EC)DHE), not for a record that had none.
        if fields.keyExchangeLogged, fields.keyExchange.isPresent || fields.tlsVersion.isPresent {
            let group = fields.keyExchange.isPresent ? intern(fields.keyExchange, line) + 1 : 0
            let value = group << 2 | (fields.pqOffered.map { $0 ? 1 : 0 } ?? 2)
            if destinations[slot].run.keyExchange != value {
                destinations[slot].run.keyExchange = value
                keyExchanges.insert(Pair(slot: slot, value: value))
            }
        }
    }

    /// A record that says its path: a transparent one counts for its app and device, a proxy one marks
    /// its device as one that uses the proxy (a device is its `--device` name, else its address).
    private mutating func count(path fields: RecordScanner.Fields, app: RecordScanner.Span, _ line: UnsafeRawBufferPointer) {
        let path = span(fields.path, line)
        let transparentPath = path.elementsEqual("transparent".utf8)
        guard transparentPath || path.elementsEqual("proxy".utf8) else { return }
        let device: Int
        if fields.device.isPresent {
            device = intern(fields.device, line)
        } else if fields.client.isPresent, !fields.client.escaped {
            // `IP:PORT` or `[IPv6]:PORT`: the address alone.
            var client = span(fields.client, line)
            if let colon = client.lastIndex(of: UInt8(ascii: ":")) { client = UnsafeRawBufferPointer(rebasing: client[..<colon]) }
            if client.first == UInt8(ascii: "["), client.last == UInt8(ascii: "]") {
                client = UnsafeRawBufferPointer(rebasing: client[(client.startIndex + 1)..<(client.endIndex - 1)])
            }
            device = strings.id(client)
        } else {
            return
        }
        guard transparentPath else {
            proxyDevices.insert(device)
            return
        }
        let appID = app.isPresent ? intern(app, line) : strings.id(UnsafeRawBufferPointer(start: nil, count: 0))
        var destination = -1
        if fields.hasDestination {
            keyBuffer.removeAll(keepingCapacity: true)
            let host = span(fields.host, line)
            let bracketed = host.contains(UInt8(ascii: ":"))
            if bracketed { keyBuffer.append(UInt8(ascii: "[")) }
            keyBuffer.append(contentsOf: host)
            keyBuffer.append(contentsOf: ((bracketed ? "]:" : ":") + String(fields.port)).utf8)
            destination = keyBuffer.withUnsafeBytes { strings.id($0) }
        } else if fields.originalDestination.isPresent {
            destination = intern(fields.originalDestination, line)
        }
        let key = Pair(slot: appID, value: device)
        transparent[key, default: (0, [])].records += 1
        if destination >= 0 { transparent[key]!.destinations.insert(destination) }
    }

    /// One record of device `id` at `slot`: a run of records from one device (a phone's burst)
    /// touches only the destination; a change of device flushes the run into the table.
    private mutating func count(device id: Int, slot: Int) {
        if destinations[slot].run.device == id {
            destinations[slot].run.deviceCount += 1
            return
        }
        let run = destinations[slot].run
        if run.device >= 0 { deviceCounts[Pair(slot: slot, value: run.device), default: 0] += run.deviceCount }
        destinations[slot].run.device = id
        destinations[slot].run.deviceCount = 1
    }

    /// What a record changes in its destination, in one access. Runs of the same reason, handshake or
    /// exception (a client repeating itself) only touch the destination; a change of value reports
    /// what the builder's tables must take.
    private static func update(_ destination: inout DestinationTraffic, action: LoggedAction, time: Int64,
                               contextBit: UInt8, reason: Int, handshake: Int, exception: Int)
        -> (flushedReason: (id: Int, count: Int)?, newHandshake: Bool, newException: Bool) {
        destination.records += 1
        destination.actions[action] += 1
        destination.contextBits |= contextBit
        if time < destination.firstTime { destination.firstTime = time }
        if time > destination.lastTime { destination.lastTime = time }
        var flushed: (id: Int, count: Int)?
        if reason >= 0 {
            if destination.run.reason == reason {
                destination.run.reasonCount += 1
            } else {
                if destination.run.reason >= 0 { flushed = (destination.run.reason, destination.run.reasonCount) }
                destination.run.reason = reason
                destination.run.reasonCount = 1
            }
        }
        let newHandshake = handshake >= 0 && destination.run.handshake != handshake
        if newHandshake { destination.run.handshake = handshake }
        let newException = exception >= 0 && destination.run.exception != exception
        if newException { destination.run.exception = exception }
        return (flushed, newHandshake, newException)
    }

    /// The load context of a record, as a bit; User-Agents are few, so each is classified once.
    private mutating func contextBit(_ userAgent: RecordScanner.Span, _ line: UnsafeRawBufferPointer) -> UInt8 {
        guard userAgent.isPresent else { return 1 }
        // Records come in runs from one client: the last User-Agent is compared before any hashing.
        let bytes = span(userAgent, line)
        if !userAgent.escaped, bytes.count > 0, bytes.count == lastUserAgent.count,
           lastUserAgent.withUnsafeBytes({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            return lastUserAgentBit
        }
        let id = intern(userAgent, line)
        defer {
            lastUserAgent = Array(bytes)
            lastUserAgentBit = contextBitOf[id]
        }
        while contextBitOf.count <= id { contextBitOf.append(0) }
        if contextBitOf[id] == 0 {
            let context = LoadContext.infer(userAgent: strings[id])
            contextBitOf[id] = 1 << UInt8(LoadContext.allCases.firstIndex(of: context)!)
        }
        return contextBitOf[id]
    }

    public func finish() -> TrafficSummary {
        var result = destinations
        var reasonCounts = self.reasonCounts
        for (slot, destination) in destinations.enumerated() where destination.run.reason >= 0 {
            reasonCounts[Pair(slot: slot, value: destination.run.reason), default: 0] += destination.run.reasonCount
        }
        for (key, count) in reasonCounts { result[key.slot].reasons[strings[key.value], default: 0] += count }
        var deviceCounts = self.deviceCounts
        for (slot, destination) in destinations.enumerated() where destination.run.device >= 0 {
            deviceCounts[Pair(slot: slot, value: destination.run.device), default: 0] += destination.run.deviceCount
        }
        for (key, count) in deviceCounts { result[key.slot].devices[strings[key.value], default: 0] += count }
        for key in handshakes {
            let cipher = key.value & 0xFFFF_FFFF
            result[key.slot].handshakes.insert(Handshake(version: strings[key.value >> 32],
                                                         cipher: cipher == 0 ? nil : strings[cipher - 1]))
        }
        for key in exceptions { result[key.slot].exceptions.insert(strings[key.value]) }
        for key in keyExchanges {
            let group = key.value >> 2, offered = key.value & 3
            result[key.slot].keyExchanges.insert(KeyExchange(group: group == 0 ? nil : strings[group - 1],
                                                             pqOffered: offered == 2 ? nil : offered == 1))
        }
        result.sort { ($0.app, $0.host, $0.port, $0.scheme) < ($1.app, $1.host, $1.port, $1.scheme) }
        var merged = buckets
        merged.flush()
        var paths = TransparentTraffic()
        for (key, entry) in transparent {
            let app = strings[key.slot]
            paths.transparent[.init(app: app.isEmpty ? "-" : app, device: strings[key.value])] =
                .init(connections: entry.records, destinations: Set(entry.destinations.map { strings[$0] }))
        }
        paths.proxyDevices = Set(proxyDevices.map { strings[$0] })
        return TrafficSummary(destinations: result, inputs: inputs, buckets: merged, undirected: undirected, paths: paths,
                              runs: runs)
    }
}
