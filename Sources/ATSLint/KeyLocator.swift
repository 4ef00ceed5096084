import ATSPolicy
import Foundation

/// Finds the line of a key path in the text of an XML plist or JSON file, so findings can point at it.
///
/// Not a parser: one pass indexes where every key is written (`<key>NAME</key>` in XML, a string followed
/// by a colon in JSON), then each key of a path is looked up after the previous one. Good enough for the
/// files people write; a path the search loses gets the line of the deepest key found.
public struct KeyLocator {
    /// Offsets of each key's spellings in the text, ascending.
    private let positions: [String: [Int]]
    /// Offsets where lines start, for a binary search.
    private let lineStarts: [Int]

    /// nil for formats without text (binary plists).
    public init?(text: String, format: PolicyFileFormat) {
        let bytes = Array(text.utf8)
        switch format {
        case .xmlPlist: positions = KeyLocator.indexXML(bytes)
        case .json: positions = KeyLocator.indexJSON(bytes)
        case .binaryPlist: return nil
        }
        var starts = [0]
        for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") { starts.append(offset + 1) }
        lineStarts = starts
    }

    /// The 1-based line of the path's last key; when the search loses the path, the line of the deepest key
    /// found (nil when none).
    public func line(of path: LintKeyPath) -> Int? {
        var cursor = 0
        var found: Int?
        var skip = 0
        for component in path.components {
            switch component {
            case .index(let index):
                // Array elements are found through the key inside them: skip one per element before.
                skip = index
            case .key(let key):
                guard let offset = find(key, from: cursor, skipping: skip) else { return found.map(lineNumber) }
                skip = 0
                found = offset
                cursor = offset + 1
            }
        }
        return found.map(lineNumber)
    }

    private func find(_ key: String, from start: Int, skipping skip: Int) -> Int? {
        guard let offsets = positions[key] else { return nil }
        var low = 0, high = offsets.count
        while low < high {
            let middle = (low + high) / 2
            if offsets[middle] < start { low = middle + 1 } else { high = middle }
        }
        let index = low + skip
        return index < offsets.count ? offsets[index] : nil
    }

    private func lineNumber(_ offset: Int) -> Int {
        var low = 0, high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low + 1
    }

    // MARK: Indexing

    private static func indexXML(_ bytes: [UInt8]) -> [String: [Int]] {
        let open = Array("<key>".utf8), close = Array("</key>".utf8)
        var index: [String: [Int]] = [:]
        var offset = 0
        while let start = search(open, in: bytes, from: offset) {
            let contentStart = start + open.count
            guard let end = search(close, in: bytes, from: contentStart) else { break }
            let raw = String(decoding: bytes[contentStart..<end], as: UTF8.self)
            index[unescapeXML(raw), default: []].append(start)
            offset = end + close.count
        }
        return index
    }

    /// The five predefined entities and numeric references.
    private static func unescapeXML(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";"),
                  rest.distance(from: amp, to: semicolon) <= 10 else {
                out += rest[amp...]
                return out
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                var scalar: Unicode.Scalar?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init)
                }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += rest[amp...semicolon] }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }

    /// Indexes object keys: strings followed by a colon. Strings are read whole, so a quote or a key name
    /// inside a value never counts.
    private static func indexJSON(_ bytes: [UInt8]) -> [String: [Int]] {
        var index: [String: [Int]] = [:]
        var offset = 0
        while offset < bytes.count {
            guard bytes[offset] == UInt8(ascii: "\"") else { offset += 1; continue }
            let start = offset
            var raw: [UInt8] = []
            offset += 1
            while offset < bytes.count, bytes[offset] != UInt8(ascii: "\"") {
                if bytes[offset] == UInt8(ascii: "\\"), offset + 1 < bytes.count {
                    raw.append(bytes[offset])
                    offset += 1
                }
                raw.append(bytes[offset])
                offset += 1
            }
            offset += 1
            var after = offset
            while after < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[after]) { after += 1 }
            if after < bytes.count, bytes[after] == UInt8(ascii: ":"), let key = unescapeJSON(raw) {
                index[key, default: []].append(start)
            }
        }
        return index
    }

    private static func unescapeJSON(_ raw: [UInt8]) -> String? {
        guard raw.contains(UInt8(ascii: "\\")) else { return String(decoding: raw, as: UTF8.self) }
        // Let the JSON decoder of the standard library do the escapes: wrap the string in an array.
        let document = [UInt8(ascii: "["), UInt8(ascii: "\"")] + raw + [UInt8(ascii: "\""), UInt8(ascii: "]")]
        guard let decoded = try? JSONDecoder().decode([String].self, from: Data(document)) else { return nil }
        return decoded.first
    }

    private static func search(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, needle.count <= bytes.count else { return nil }
        var index = start
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
