/// Reads a HAR 1.2 file (`log.entries`, as browsers' DevTools, Playwright, mitmproxy, Charles and
/// Proxyman write it) as a stream: one buffer of input is held at a time, never the document or one
/// entry, so a capture of a gigabyte with embedded response bodies costs what a small one does.
///
/// It walks the document's structure and keeps only the values the report needs (the entry's time,
/// URL, method, status, error and TLS details), each copied into a reused buffer of bounded size;
/// everything else is skipped by its `HARCursor`. Structure is checked as it goes (balanced brackets,
/// keys, colons and commas where values are read), and a file that is not JSON or ends early is
/// refused with the byte offset where it went wrong.
package struct HARParser {
    private var cursor: HARCursor
    private var entry = HAREntry()
    /// A part of a parallel read stops at the first entry that starts at or after this offset...
    package var stopAt = Int.max
    /// ...and says where that was (nil when it read to the end of the document).
    private(set) var stoppedAt: Int?
    /// `log.creator`: the tool that wrote the capture (`mitmproxy 11.0.2`).
    private(set) var creator: String?
    private var creatorName: [UInt8] = []
    private var creatorVersion: [UInt8] = []

    /// The longest URL kept (the scheme, host and port are at its start; `data:` URLs run to megabytes).
    package static let urlLimit = 8192
    /// The longest other value kept.
    package static let valueLimit = 256

    package init(source: ByteSource, bufferSize: Int = LogReader.chunkSize) {
        cursor = HARCursor(source: source, bufferSize: bufferSize)
    }

    /// Frees the read buffer (the parser is a value; its owner ends it once).
    package func close() { cursor.close() }

    /// Parses the whole document, handing each entry to `visit` (entries are numbered from 1).
    package mutating func parse(_ visit: (HAREntry) -> Void) throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "the HAR document (a JSON object)")
        var first = true
        var sawLog = false, sawEntries = false
        while let key = try cursor.member(&first, ["log"], in: "the HAR document") {
            if key == 0 {
                sawLog = true
                guard try cursor.peek() == UInt8(ascii: "{") else { throw cursor.syntax("log is not an object") }
                sawEntries = try parseLog(visit) || sawEntries
                if stoppedAt != nil { return }
            } else {
                try cursor.skipValue()
            }
        }
        cursor.skipWhitespace()
        if try cursor.peek() != nil { throw cursor.syntax("unexpected data after the HAR document") }
        guard sawLog else { throw cursor.problem("not a HAR file: the JSON document has no \"log\"") }
        guard sawEntries else { throw cursor.problem("not a HAR file: \"log\" has no \"entries\" array") }
    }

    /// `log`: its `entries` and `creator`. True when it had an entries array.
    private mutating func parseLog(_ visit: (HAREntry) -> Void) throws(LogReadError) -> Bool {
        try cursor.expect(UInt8(ascii: "{"), "log")
        var first = true
        var sawEntries = false
        while let key = try cursor.member(&first, ["entries", "creator"], in: "log") {
            switch key {
            case 0:
                guard try cursor.peek() == UInt8(ascii: "[") else { throw cursor.syntax("log.entries is not an array") }
                try parseEntries(visit, continuing: false)
                sawEntries = true
                if stoppedAt != nil { return true }
            case 1 where try cursor.peek() == UInt8(ascii: "{"):
                try parseCreator()
            default:
                try cursor.skipValue()
            }
        }
        return sawEntries
    }

    private mutating func parseCreator() throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "log.creator")
        var first = true
        while let key = try cursor.member(&first, ["name", "version"], in: "log.creator") {
            switch key {
            case 0: try cursor.readString(into: &creatorName, limit: HARParser.valueLimit)
            case 1: try cursor.readString(into: &creatorVersion, limit: HARParser.valueLimit)
            default: try cursor.skipValue()
            }
        }
        let name = String(decoding: creatorName, as: UTF8.self)
        creator = creatorVersion.isEmpty ? name : name + " " + String(decoding: creatorVersion, as: UTF8.self)
    }

    /// The rest of a document from an entry's start inside `log.entries`, as a later part of a parallel
    /// read sees it: entries, then whatever follows them in `log` and in the document.
    package mutating func parseContinuation(_ visit: (HAREntry) -> Void) throws(LogReadError) {
        try parseEntries(visit, continuing: true)
        if stoppedAt != nil { return }
        var first = false
        while let key = try cursor.member(&first, ["creator"], in: "log") {
            if key == 0, try cursor.peek() == UInt8(ascii: "{") { try parseCreator() } else { try cursor.skipValue() }
        }
        first = false
        while try cursor.member(&first, [], in: "the HAR document") != nil { try cursor.skipValue() }
        cursor.skipWhitespace()
        if try cursor.peek() != nil { throw cursor.syntax("unexpected data after the HAR document") }
    }

    /// The entries array (`continuing`: from an entry's start inside it, for a later part), visiting each
    /// entry; returns at its closing bracket, or at the first entry starting at or after `stopAt`.
    private mutating func parseEntries(_ visit: (HAREntry) -> Void, continuing: Bool) throws(LogReadError) {
        if !continuing { try cursor.expect(UInt8(ascii: "["), "log.entries") }
        var index = 0
        while true {
            cursor.skipWhitespace()
            guard let next = try cursor.peek() else { throw cursor.truncated("log.entries") }
            if next == UInt8(ascii: "]"), !(continuing && index == 0) { cursor.advance(); return }
            if index > 0 {
                guard next == UInt8(ascii: ",") else { throw cursor.syntax("expected , or ] between entries") }
                cursor.advance()
                cursor.skipWhitespace()
            }
            if cursor.offset >= stopAt {
                stoppedAt = cursor.offset
                return
            }
            index += 1
            entry.reset(index: index, offset: cursor.offset)
            if try cursor.peek() == UInt8(ascii: "{") {
                try parseEntry()
            } else {
                try cursor.skipValue()
                entry.notAnObject = true
            }
            visit(entry)
        }
    }

    private static let entryKeys: [StaticString] = ["startedDateTime", "request", "response", "_securityDetails"]
    private static let requestKeys: [StaticString] = ["url", "method"]
    private static let responseKeys: [StaticString] = ["status", "_error"]
    private static let securityKeys: [StaticString] = ["protocol", "cipher", "keyExchange", "keyExchangeGroup", "mac"]

    private mutating func parseEntry() throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "an entry")
        var first = true
        while let key = try cursor.member(&first, HARParser.entryKeys, in: "entry \(entry.index)") {
            switch key {
            case 0: entry.hasStarted = try cursor.readString(into: &entry.started, limit: HARParser.valueLimit)
            case 1 where try cursor.peek() == UInt8(ascii: "{"): try parseRequest()
            case 2 where try cursor.peek() == UInt8(ascii: "{"): try parseResponse()
            case 3 where try cursor.peek() == UInt8(ascii: "{"): try parseSecurityDetails()
            default: try cursor.skipValue()
            }
        }
    }

    private mutating func parseRequest() throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "request")
        var first = true
        while let key = try cursor.member(&first, HARParser.requestKeys, in: "request") {
            switch key {
            case 0: entry.hasURL = try cursor.readString(into: &entry.url, limit: HARParser.urlLimit)
            case 1: try cursor.readString(into: &entry.method, limit: HARParser.valueLimit)
            default: try cursor.skipValue()
            }
        }
    }

    private mutating func parseResponse() throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "response")
        var first = true
        while let key = try cursor.member(&first, HARParser.responseKeys, in: "response") {
            switch key {
            case 0: entry.status = try cursor.readInteger()
            case 1: try cursor.readString(into: &entry.error, limit: HARParser.valueLimit)
            default: try cursor.skipValue()
            }
        }
    }

    /// Chrome's and Playwright's `_securityDetails`: the protocol always; Chrome's DevTools protocol
    /// also gives the cipher, key exchange, MAC and key exchange group.
    private mutating func parseSecurityDetails() throws(LogReadError) {
        try cursor.expect(UInt8(ascii: "{"), "_securityDetails")
        var first = true
        while let key = try cursor.member(&first, HARParser.securityKeys, in: "_securityDetails") {
            switch key {
            case 0: try cursor.readString(into: &entry.tlsProtocol, limit: HARParser.valueLimit)
            case 1: try cursor.readString(into: &entry.cipher, limit: HARParser.valueLimit)
            case 2: try cursor.readString(into: &entry.keyExchange, limit: HARParser.valueLimit)
            case 3: try cursor.readString(into: &entry.keyExchangeGroup, limit: HARParser.valueLimit)
            case 4: try cursor.readString(into: &entry.mac, limit: HARParser.valueLimit)
            default: try cursor.skipValue()
            }
        }
    }
}
