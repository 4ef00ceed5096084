/// Reads the fields of a decision record that the report needs straight from the bytes of one JSON line.
///
/// Not a general JSON parser, and deliberately not Foundation's: a million-record log is mostly messages
/// and byte counts the report never looks at, so strings are skipped eight bytes at a time and only the
/// wanted values are kept, as spans of the line. The line is still checked as JSON structure (an object
/// of key/value pairs with balanced strings, arrays and objects), so a line of another program or a
/// truncated last line is refused as "not a record" rather than half-read. Unknown fields, of any type,
/// are skipped: the log format grows. (Numbers and literals are taken as written, not validated.)
public struct RecordScanner {
    /// A value's bytes within the line: a string's contents without quotes, or a literal's text.
    public struct Span: Equatable, Sendable {
        public var start: Int
        public var count: Int
        /// A string containing a backslash escape (decoded on demand by `RecordScanner.string`).
        public var escaped: Bool

        package static let none = Span(start: 0, count: -1, escaped: false)
        public var isPresent: Bool { count >= 0 }
    }

    /// The fields the report reads. A field that is absent or JSON null is `.none`.
    public struct Fields: Sendable {
        public var time = Span.none
        public var app = Span.none
        public var policy = Span.none
        public var scheme = Span.none
        public var host = Span.none
        public var port = -1
        public var action = Span.none
        public var reason = Span.none
        public var exception = Span.none
        public var tlsVersion = Span.none
        public var cipher = Span.none
        public var message = Span.none
        /// The client's User-Agent (device-lab logs), from which the load context is inferred.
        public var userAgent = Span.none
        /// nil when absent or null.
        public var enforced: Bool?
        /// The elements of `cert_tolerated`, if any (rare: only hosts that allow cleartext).
        public var certTolerated: [Span] = []
        /// The group the server chose (`key_exchange`); `keyExchangeLogged` tells a null (a handshake
        /// without one) from a record that has no such field (a proxy before it logged them).
        public var keyExchange = Span.none
        public var keyExchangeLogged = false
        /// `pq_offered`: the client offered a post-quantum group; nil when absent or null.
        public var pqOffered: Bool?
        /// `dropped` of a `log-overflow` record: decisions the proxy could not log; -1 when absent.
        public var dropped = -1
        /// `bytes_up` and `bytes_down`: what the request moved; -1 when absent or null.
        public var bytesUp = -1
        public var bytesDown = -1
        /// The lab's name of the client device (`--device`), when one matched.
        public var device = Span.none
        /// The transparent gate: `path` (proxy, transparent, quic), the client's `IP:PORT` (a device's
        /// address when it has no name), and the redirected connection's `original_dst`.
        public var path = Span.none
        public var client = Span.none
        public var originalDestination = Span.none
        /// `client_alert` of a client's refusal of the server: the alert's name; `clientAlertLogged`
        /// tells a null (TLS 1.3: encrypted) from a record without the field.
        public var clientAlert = Span.none
        public var clientAlertLogged = false
        /// The daemon's run (`run`), on every record of a daemon that keeps the run ledger.
        public var run = Span.none
        /// `ledger` of the run ledger's own records (`run-start`, `run-checkpoint`, `run-stop`).
        public var ledger = Span.none

        /// The fields without which a line is not a decision record. (The proxy's own answers to
        /// requests that name no destination, such as a 400, have a null scheme, host and port.)
        public var missing: [String] {
            var names: [String] = []
            if !time.isPresent { names.append("time") }
            if !action.isPresent { names.append("action") }
            return names
        }

        /// The record names a destination (scheme, host and a valid port).
        public var hasDestination: Bool { scheme.isPresent && host.isPresent && port > 0 }
    }

    public enum Outcome {
        case record(Fields)
        /// A record of the run ledger (`ledger`, and no `action`): the log's own, not a decision.
        case ledger(Fields)
        /// A JSON object without the fields a decision has (listed).
        case missingFields([String])
        /// Not a JSON object at all, or cut short.
        case notARecord
    }

    public init() {}

    /// Scans one line (without its newline).
    public func scan(_ line: UnsafeRawBufferPointer) -> Outcome {
        var fields = Fields()
        switch scan(line, into: &fields) {
        case .record: return .record(fields)
        case .ledger: return .ledger(fields)
        case .missingFields: return .missingFields(fields.missing)
        case .notARecord: return .notARecord
        }
    }

    /// What `scan(_:into:)` found; the fields are in its argument.
    public enum Kind {
        case record, ledger, missingFields, notARecord
    }

    /// Scans one line into `fields` (which must start empty): the hot path, with no copy of the fields.
    public func scan(_ line: UnsafeRawBufferPointer, into fields: inout Fields) -> Kind {
        guard let base = line.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return .notARecord }
        var cursor = Cursor(base: base, end: line.count)
        cursor.skipWhitespace()
        guard cursor.take(UInt8(ascii: "{")) else { return .notARecord }
        cursor.skipWhitespace()
        if cursor.take(UInt8(ascii: "}")) { return .missingFields }
        while true {
            cursor.skipWhitespace()
            guard let key = cursor.string() else { return .notARecord }
            cursor.skipWhitespace()
            guard cursor.take(UInt8(ascii: ":")) else { return .notARecord }
            cursor.skipWhitespace()
            guard store(key: key, cursor: &cursor, fields: &fields) else { return .notARecord }
            cursor.skipWhitespace()
            if cursor.take(UInt8(ascii: ",")) { continue }
            guard cursor.take(UInt8(ascii: "}")) else { return .notARecord }
            cursor.skipWhitespace()
            guard cursor.atEnd else { return .notARecord }
            break
        }
        if fields.time.isPresent, fields.ledger.isPresent, !fields.action.isPresent { return .ledger }
        return fields.time.isPresent && fields.action.isPresent ? .record : .missingFields
    }

    /// Reads the value of `key` into `fields` when the report wants it, else skips it. False when the
    /// value is not well-formed JSON.
    private func store(key: Span, cursor: inout Cursor, fields: inout Fields) -> Bool {
        let name = key.escaped ? nil : Key(cursor.base + key.start, key.count)
        switch name {
        case .time?: return cursor.stringOrNull(into: &fields.time)
        case .app?: return cursor.stringOrNull(into: &fields.app)
        case .policy?: return cursor.stringOrNull(into: &fields.policy)
        case .scheme?: return cursor.stringOrNull(into: &fields.scheme)
        case .host?: return cursor.stringOrNull(into: &fields.host)
        case .action?: return cursor.stringOrNull(into: &fields.action)
        case .reason?: return cursor.stringOrNull(into: &fields.reason)
        case .exception?: return cursor.stringOrNull(into: &fields.exception)
        case .tlsVersion?: return cursor.stringOrNull(into: &fields.tlsVersion)
        case .cipher?: return cursor.stringOrNull(into: &fields.cipher)
        case .message?: return cursor.stringOrNull(into: &fields.message)
        case .userAgent?: return cursor.stringOrNull(into: &fields.userAgent)
        case .device?: return cursor.stringOrNull(into: &fields.device)
        case .path?: return cursor.stringOrNull(into: &fields.path)
        case .client?: return cursor.stringOrNull(into: &fields.client)
        case .originalDestination?: return cursor.stringOrNull(into: &fields.originalDestination)
        case .run?: return cursor.stringOrNull(into: &fields.run)
        case .ledger?: return cursor.stringOrNull(into: &fields.ledger)
        case .clientAlert?:
            fields.clientAlertLogged = true
            return cursor.stringOrNull(into: &fields.clientAlert)
        case .port?:
            guard let literal = cursor.literal() else { return false }
            fields.port = RecordScanner.port(cursor.base + literal.start, literal.count)
            return true
        case .enforced?:
            guard let literal = cursor.literal() else { return false }
            fields.enforced = RecordScanner.bool(cursor.base + literal.start, literal.count)
            return true
        case .pqOffered?:
            guard let literal = cursor.literal() else { return false }
            fields.pqOffered = RecordScanner.bool(cursor.base + literal.start, literal.count)
            return true
        case .keyExchange?:
            fields.keyExchangeLogged = true
            return cursor.stringOrNull(into: &fields.keyExchange)
        case .dropped?:
            guard let literal = cursor.literal() else { return false }
            fields.dropped = RecordScanner.count(cursor.base + literal.start, literal.count)
            return true
        case .bytesUp?:
            guard let literal = cursor.literal() else { return false }
            fields.bytesUp = RecordScanner.count(cursor.base + literal.start, literal.count)
            return true
        case .bytesDown?:
            guard let literal = cursor.literal() else { return false }
            fields.bytesDown = RecordScanner.count(cursor.base + literal.start, literal.count)
            return true
        case .certTolerated?:
            guard cursor.peek == UInt8(ascii: "[") else { return cursor.skipValue() }
            cursor.index += 1
            cursor.skipWhitespace()
            if cursor.take(UInt8(ascii: "]")) { return true }
            while true {
                cursor.skipWhitespace()
                guard let element = cursor.string() else { return false }
                fields.certTolerated.append(element)
                cursor.skipWhitespace()
                if cursor.take(UInt8(ascii: ",")) { continue }
                return cursor.take(UInt8(ascii: "]"))
            }
        case nil:
            return cursor.skipValue()
        }
    }

    /// `true` or `false`; nil for anything else (null).
    private static func bool(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Bool? {
        let text = UnsafeBufferPointer(start: bytes, count: count)
        if text.elementsEqual("true".utf8) { return true }
        if text.elementsEqual("false".utf8) { return false }
        return nil
    }

    /// A non-negative integer of at most 18 digits, else -1.
    private static func count(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
        guard count > 0, count <= 18 else { return -1 }
        var value = 0
        for index in 0..<count {
            let digit = Int(bytes[index]) - 0x30
            guard digit >= 0, digit <= 9 else { return -1 }
            value = value * 10 + digit
        }
        return value
    }

    /// A port as 1...65535, else -1.
    private static func port(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
        guard count <= 5 else { return -1 }
        let value = RecordScanner.count(bytes, count)
        return (1...65535).contains(value) ? value : -1
    }

    /// The text of a span of `line` (escapes decoded).
    public static func string(_ span: Span, in line: UnsafeRawBufferPointer) -> String {
        let bytes = UnsafeRawBufferPointer(rebasing: line[span.start..<(span.start + span.count)])
        guard span.escaped else { return String(decoding: bytes, as: UTF8.self) }
        return unescape(bytes)
    }

    /// Decodes JSON string escapes (`\"`, `\\`, `\/`, `\b` `\f` `\n` `\r` `\t`, `\uXXXX` with surrogates).
    package static func unescape(_ bytes: UnsafeRawBufferPointer) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() {
            if !utf8.isEmpty { scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars); utf8.removeAll() }
        }
        var index = 0
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                guard let digit = Int(String(UnicodeScalar(bytes[at + offset])), radix: 16) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < bytes.count else { utf8.append(byte); index += 1; continue }
            let next = bytes[index + 1]
            index += 2
            switch next {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                guard var code = hex4(index) else { continue }
                index += 4
                if (0xD800..<0xDC00).contains(code), index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                   bytes[index + 1] == UInt8(ascii: "u"), let low = hex4(index + 2), (0xDC00..<0xE000).contains(low) {
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                flush()
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default: utf8.append(next)
            }
        }
        flush()
        return String(scalars)
    }
}

/// The keys the report reads, recognised by length and bytes.
private enum Key {
    case time, app, policy, scheme, host, port, action, reason, exception, tlsVersion, cipher, message
    case enforced, certTolerated, userAgent, keyExchange, pqOffered, dropped, device, clientAlert, run, ledger
    case bytesUp, bytesDown
    case path, client, originalDestination

    package init?(_ bytes: UnsafePointer<UInt8>, _ count: Int) {
        func equals(_ text: StaticString) -> Bool {
            text.utf8CodeUnitCount == count && memcmp(bytes, text.utf8Start, count) == 0
        }
        switch (count, bytes[0]) {
        case (4, UInt8(ascii: "t")) where equals("time"): self = .time
        case (4, UInt8(ascii: "h")) where equals("host"): self = .host
        case (4, UInt8(ascii: "p")) where equals("port"): self = .port
        case (3, UInt8(ascii: "a")) where equals("app"): self = .app
        case (3, UInt8(ascii: "r")) where equals("run"): self = .run
        case (6, UInt8(ascii: "l")) where equals("ledger"): self = .ledger
        case (6, UInt8(ascii: "p")) where equals("policy"): self = .policy
        case (6, UInt8(ascii: "s")) where equals("scheme"): self = .scheme
        case (6, UInt8(ascii: "a")) where equals("action"): self = .action
        case (6, UInt8(ascii: "r")) where equals("reason"): self = .reason
        case (6, UInt8(ascii: "c")) where equals("cipher"): self = .cipher
        case (7, UInt8(ascii: "m")) where equals("message"): self = .message
        case (8, UInt8(ascii: "e")) where equals("enforced"): self = .enforced
        case (9, UInt8(ascii: "e")) where equals("exception"): self = .exception
        case (11, UInt8(ascii: "t")) where equals("tls_version"): self = .tlsVersion
        case (10, UInt8(ascii: "u")) where equals("user_agent"): self = .userAgent
        case (14, UInt8(ascii: "c")) where equals("cert_tolerated"): self = .certTolerated
        case (12, UInt8(ascii: "k")) where equals("key_exchange"): self = .keyExchange
        case (10, UInt8(ascii: "p")) where equals("pq_offered"): self = .pqOffered
        case (7, UInt8(ascii: "d")) where equals("dropped"): self = .dropped
        case (6, UInt8(ascii: "d")) where equals("device"): self = .device
        case (12, UInt8(ascii: "c")) where equals("client_alert"): self = .clientAlert
        case (8, UInt8(ascii: "b")) where equals("bytes_up"): self = .bytesUp
        case (10, UInt8(ascii: "b")) where equals("bytes_down"): self = .bytesDown
        case (4, UInt8(ascii: "p")) where equals("path"): self = .path
        case (6, UInt8(ascii: "c")) where equals("client"): self = .client
        case (12, UInt8(ascii: "o")) where equals("original_dst"): self = .originalDestination
        default: return nil
        }
    }
}

import Glibc

/// A position in one line's bytes.
private struct Cursor {
    package let base: UnsafePointer<UInt8>
    package let end: Int
    package var index = 0

    package init(base: UnsafePointer<UInt8>, end: Int) {
        self.base = base
        self.end = end
    }

    package var atEnd: Bool { index >= end }
    package var peek: UInt8? { index < end ? base[index] : nil }

    package mutating func take(_ byte: UInt8) -> Bool {
        guard index < end, base[index] == byte else { return false }
        index += 1
        return true
    }

    package mutating func skipWhitespace() {
        while index < end {
            switch base[index] {
            case 0x20, 0x09, 0x0D, 0x0A: index += 1
            default: return
            }
        }
    }

    /// A string at the cursor: its contents' span, the cursor after the closing quote.
    package mutating func string() -> RecordScanner.Span? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var escaped = false
        while true {
            let special = QuoteScan.next(base, from: index, end: end)
            guard special < end else { return nil }
            if base[special] == UInt8(ascii: "\\") {
                escaped = true
                index = special + 2
                continue
            }
            index = special + 1
            return RecordScanner.Span(start: start, count: special - start, escaped: escaped)
        }
    }

    /// A string value, or null (left as `.none`).
    package mutating func stringOrNull(into span: inout RecordScanner.Span) -> Bool {
        if peek == UInt8(ascii: "\"") {
            guard let value = string() else { return false }
            span = value
            return true
        }
        return skipValue()
    }

    /// A number or `true`/`false`/`null`: the bytes up to the next delimiter.
    package mutating func literal() -> RecordScanner.Span? {
        let start = index
        while index < end {
            switch base[index] {
            case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0D, 0x0A:
                return index > start ? RecordScanner.Span(start: start, count: index - start, escaped: false) : nil
            case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ":"):
                return nil
            default: index += 1
            }
        }
        return index > start ? RecordScanner.Span(start: start, count: index - start, escaped: false) : nil
    }

    /// Skips any JSON value, nested ones included; false when it is malformed or cut short.
    package mutating func skipValue() -> Bool {
        guard let first = peek else { return false }
        switch first {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < end {
                let byte = base[index]
                switch byte {
                case UInt8(ascii: "\""):
                    guard string() != nil else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { index += 1; return true }
                default: break
                }
                index += 1
            }
            return false
        default:
            return literal() != nil
        }
    }
}
