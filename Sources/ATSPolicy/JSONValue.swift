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

    /// Indented JSON for documents people read.
    public var pretty: String {
        var out = ""
        write(to: &out, indent: "  ", level: 0)
        return out
    }

    private func write(to out: inout String, indent: String?, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            writeContainer(open: "[", close: "]", count: items.count, to: &out, indent: indent, level: level) {
                index, out in items[index].write(to: &out, indent: indent, level: level + 1)
            }
        case .object(let fields):
            writeContainer(open: "{", close: "}", count: fields.count, to: &out, indent: indent, level: level) {
                index, out in
                JSONValue.writeString(fields[index].0, to: &out)
                out += indent == nil ? ":" : ": "
                fields[index].1.write(to: &out, indent: indent, level: level + 1)
            }
        }
    }

    private func writeContainer(open: String, close: String, count: Int, to out: inout String, indent: String?,
                                level: Int, element: (Int, inout String) -> Void) {
        out += open
        guard count > 0 else { out += close; return }
        for index in 0..<count {
            if index > 0 { out += "," }
            if let indent { out += "\n" + String(repeating: indent, count: level + 1) }
            element(index, &out)
        }
        if let indent { out += "\n" + String(repeating: indent, count: level) }
        out += close
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Most strings need no escaping: append them whole (the per-scalar path dominated log cost).
        // A native string's bytes are contiguous: scanning them directly is several times faster
        // than the generic UTF8View iteration (the top symbol of the proxy's own code per tunnel).
        let special: (UInt8) -> Bool = { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        let needsEscaping = s.utf8.withContiguousStorageIfAvailable { $0.contains(where: special) }
            ?? s.utf8.contains(where: special)
        if !needsEscaping {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
