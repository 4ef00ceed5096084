/// A JSON value whose objects keep their field order, so output reads as INTERFACE.md shows it.
public indirect enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }

    /// `.string(text)` or `.null`.
    public static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.map(\.0) == b.map(\.0) && a.map(\.1) == b.map(\.1)
        default: false
        }
    }

    /// Compact one-line JSON (for JSON lines).
    public var compact: String {
        var out = ""
        out.reserveCapacity(512)
        write(to: &out, indent: nil, level: 0)
        return out
    }

    /// Appends compact JSON as UTF-8 (the decision log's lines: no String in between).
    public func appendCompact(to bytes: inout [UInt8]) {
        write(to: &bytes, indent: nil, level: 0)
    }

    /// Appends `text` as a JSON string literal (quoted and escaped) in UTF-8.
    public static func appendString(_ text: String, to bytes: inout [UInt8]) {
        writeString(text, to: &bytes)
    }

    /// Indented JSON for documents people read.
    public var pretty: String {
        var out = ""
        write(to: &out, indent: "  ", level: 0)
        return out
    }

    private func write<Out: JSONOutput>(to out: inout Out, indent: String?, level: Int) {
        switch self {
        case .null: out.append("null")
        case .bool(let b): out.append(b ? "true" : "false")
        case .int(let i): out.append(String(i))
        case .double(let d): out.append(d.isFinite ? String(d) : "null")
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            writeContainer(open: "[", close: "]", count: items.count, to: &out, indent: indent, level: level) {
                index, out in items[index].write(to: &out, indent: indent, level: level + 1)
            }
        case .object(let fields):
            writeContainer(open: "{", close: "}", count: fields.count, to: &out, indent: indent, level: level) {
                index, out in
                JSONValue.writeString(fields[index].0, to: &out)
                out.append(indent == nil ? ":" : ": ")
                fields[index].1.write(to: &out, indent: indent, level: level + 1)
            }
        }
    }

    private func writeContainer<Out: JSONOutput>(open: String, close: String, count: Int, to out: inout Out,
                                                 indent: String?, level: Int, element: (Int, inout Out) -> Void) {
        out.append(open)
        guard count > 0 else { out.append(close); return }
        for index in 0..<count {
            if index > 0 { out.append(",") }
            if let indent { out.append("\n" + String(repeating: indent, count: level + 1)) }
            element(index, &out)
        }
        if let indent { out.append("\n" + String(repeating: indent, count: level)) }
        out.append(close)
    }

    private static func writeString<Out: JSONOutput>(_ s: String, to out: inout Out) {
        out.append("\"")
        // Most strings need no escaping: append them whole (the per-scalar path dominated log cost).
        // A native string's bytes are contiguous: scanning them directly is several times faster
        // than the generic UTF8View iteration (the top symbol of the proxy's own code per tunnel).
        let special: (UInt8) -> Bool = { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        let needsEscaping = s.utf8.withContiguousStorageIfAvailable { $0.contains(where: special) }
            ?? s.utf8.contains(where: special)
        if !needsEscaping {
            out.append(s)
            out.append("\"")
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: out.append(String(scalar))
            }
        }
        out.append("\"")
    }
}

/// Where JSON text goes: a String, or UTF-8 bytes for the log.
package protocol JSONOutput {
    mutating func append(_ text: String)
}

extension String: JSONOutput {}

extension Array: JSONOutput where Element == UInt8 {
    package mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
