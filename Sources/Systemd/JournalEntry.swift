import Glibc

/// One journal record as the `KEY=value` fields sd_journal_sendv(3) takes: MESSAGE, PRIORITY, then
/// the caller's fields in order. Values are bytes, so newlines and any other byte pass unchanged.
public struct JournalEntry: Sendable, Equatable {
    /// Each field as sent: the name, "=", the value's UTF-8 bytes.
    public private(set) var fields: [[UInt8]]

    /// Throws when `priority` is not a syslog level (0 emerg ... 7 debug) or a field name is invalid.
    public init(message: String, priority: Int, fields extra: [(String, String)]) throws {
        guard (0...7).contains(priority) else {
            throw SystemdError("journal priority \(priority) is not a syslog level 0...7")
        }
        fields = [Self.field("MESSAGE", message), Self.field("PRIORITY", String(priority))]
        for (name, value) in extra {
            try Self.validate(fieldName: name)
            if name == "MESSAGE" || name == "PRIORITY" {
                throw SystemdError("journal field \(name) is set by the message and priority arguments")
            }
            fields.append(Self.field(name, value))
        }
    }

    /// journald's rule for names a client may send: 1...64 of A-Z, 0-9 and "_", not starting with a
    /// digit, and not with "_" (those are trusted fields journald adds itself).
    public static func validate(fieldName name: String) throws {
        let bytes = Array(name.utf8)
        let problem: String? =
            if bytes.isEmpty { "is empty" }
            else if bytes.count > 64 { "is longer than 64 characters" }
            else if bytes[0] == UInt8(ascii: "_") { "starts with '_' (reserved for journald's trusted fields)" }
            else if isDigit(bytes[0]) { "starts with a digit" }
            else if !bytes.allSatisfy({ isUpper($0) || isDigit($0) || $0 == UInt8(ascii: "_") }) {
                "may hold only A-Z, 0-9 and '_'"
            } else { nil }
        if let problem { throw SystemdError("journal field name '\(name)' \(problem)") }
    }

    /// The journal name for a log record key, e.g. "tls_version" -> "TLS_VERSION", "bytes-up" ->
    /// "BYTES_UP"; nil when nothing valid remains (empty, or a leading digit).
    public static func fieldName(for key: String) -> String? {
        let mapped = key.utf8.map { byte -> UInt8 in
            if isUpper(byte) || isDigit(byte) { return byte }
            if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { return byte - 32 }
            return UInt8(ascii: "_")
        }
        let name = String(decoding: mapped.drop { $0 == UInt8(ascii: "_") }.prefix(64), as: UTF8.self)
        return (try? validate(fieldName: name)) == nil ? nil : name
    }

    /// The fields as iovecs over one contiguous buffer, valid only inside `body`.
    func withIOVecs<Result>(_ body: (UnsafeBufferPointer<iovec>) throws -> Result) rethrows -> Result {
        let buffer = fields.flatMap { $0 }
        return try buffer.withUnsafeBytes { bytes in
            var offset = 0
            let vectors = fields.map { field -> iovec in
                let start = UnsafeMutableRawPointer(mutating: bytes.baseAddress!.advanced(by: offset))
                offset += field.count
                return iovec(iov_base: start, iov_len: field.count)
            }
            return try vectors.withUnsafeBufferPointer(body)
        }
    }

    private static func field(_ name: String, _ value: String) -> [UInt8] {
        Array(name.utf8) + [UInt8(ascii: "=")] + Array(value.utf8)
    }

    private static func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
