import Foundation

/// A property-list value with its exact type kept, so that only a real boolean counts as YES/NO (R1).
///
/// Foundation on Linux bridges `<integer>1</integer>` to `Bool` through `as?`; decoding into this enum
/// keeps `<true/>`, `1` and `"YES"` apart in XML, binary and JSON alike.
public indirect enum PlistValue: Sendable, Equatable {
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case string(String)
    case date(Date)
    case data(Data)
    case array([PlistValue])
    case dictionary([String: PlistValue])
    /// JSON `null`; plists have no such value.
    case null

    /// The type's name as a plist author would write it, for messages.
    public var typeName: String {
        switch self {
        case .bool: "boolean"
        case .integer: "integer"
        case .real: "real"
        case .string: "string"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        case .null: "null"
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var dictionaryValue: [String: PlistValue]? {
        if case .dictionary(let d) = self { return d }
        return nil
    }

    public var arrayValue: [PlistValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// A short rendering of the value for messages: `"YES"` (string), `1` (integer), `YES` (boolean).
    public var shortDescription: String {
        switch self {
        case .bool(let b): b ? "YES" : "NO"
        case .integer(let i): String(i)
        case .real(let r): String(r)
        case .string(let s): "\"\(s)\""
        case .date(let d): d.formatted(.iso8601)
        case .data(let d): "<\(d.count) bytes>"
        case .array(let a): "array of \(a.count)"
        case .dictionary(let d): "dictionary of \(d.count)"
        case .null: "null"
        }
    }
}

extension PlistValue: Decodable {
    private struct AnyKey: CodingKey {
        var stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Deeper nesting is refused: decoding recurses, and a crafted file must not exhaust the stack.
    /// Real Info.plists nest a few levels; the ATS dictionary at most five.
    public static let maximumDepth = 64

    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count < PlistValue.maximumDepth else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "nested deeper than \(PlistValue.maximumDepth) levels"))
        }
        if var list = try? decoder.unkeyedContainer() {
            var values: [PlistValue] = []
            while !list.isAtEnd { values.append(try list.decode(PlistValue.self)) }
            self = .array(values)
            return
        }
        if let keyed = try? decoder.container(keyedBy: AnyKey.self) {
            var values: [String: PlistValue] = [:]
            for key in keyed.allKeys {
                values[key.stringValue] = try keyed.decode(PlistValue.self, forKey: key)
            }
            self = .dictionary(values)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { self = .null; return }
        // Order matters: a boolean must be tried before numbers, a date and data before strings
        // would be wrong (XML strings that look like dates stay strings), so strings come first.
        if let b = try? single.decode(Bool.self) { self = .bool(b); return }
        if let i = try? single.decode(Int64.self) { self = .integer(i); return }
        if let r = try? single.decode(Double.self) { self = .real(r); return }
        if let s = try? single.decode(String.self) { self = .string(s); return }
        if let d = try? single.decode(Date.self) { self = .date(d); return }
        if let d = try? single.decode(Data.self) { self = .data(d); return }
        throw DecodingError.dataCorruptedError(in: single, debugDescription: "value of unknown type")
    }
}
