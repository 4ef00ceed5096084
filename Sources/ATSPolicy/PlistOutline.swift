import Foundation

/// Where every key and value of a policy file's text sits: each dictionary's entries in the order they are
/// written, duplicates included, with their byte offsets.
///
/// Foundation's decoders keep one value per key and report where a document breaks with a line that is
/// often wrong (its XML reader says "line 1" for a close tag on line 131) or with none at all (JSON). The
/// outline reads the same grammar itself, so lint can see keys written twice and the loader can say where
/// a document breaks. It never decides what a value is: values are decoded by Foundation, as the loader
/// decodes them (`value(of:)`).
package struct PlistOutline: Sendable {
    package enum Kind: Sendable, Equatable {
        case dictionary
        case array
        /// A string, number, boolean, date, data or null.
        case scalar
    }

    /// One value: `<dict>...</dict>`, `<string>x</string>`, `{...}`, `"x"`.
    package struct Node: Sendable {
        package var kind: Kind
        /// Offset of its first byte (the `<` of the element, the `{` or quote in JSON).
        package var start: Int
        /// Offset just past its last byte.
        package var end: Int
        /// A dictionary's entries in the order written.
        package var entries: [Entry] = []
        /// An array's elements (indexes into `nodes`).
        package var elements: [Int] = []
    }

    /// A key and its value.
    package struct Entry: Sendable {
        package var key: String
        /// Offset of the key's first byte (the `<` of `<key>`, the quote in JSON).
        package var keyStart: Int
        /// Index of the value in `nodes`.
        package var value: Int
    }

    package let format: PolicyFileFormat
    package let nodes: [Node]
    /// Index of the document's value (inside `<plist>`).
    package let root: Int
    package let lines: TextLines
    private let bytes: [UInt8]

    /// Reads XML plist or JSON text; throws where the document breaks. Binary plists have no text.
    package init(bytes: [UInt8], format: PolicyFileFormat) throws(PlistSyntaxError) {
        self.format = format
        self.bytes = bytes
        self.lines = TextLines(bytes)
        var builder = Builder()
        switch format {
        case .xmlPlist:
            var outliner = XMLPlistOutliner(bytes: bytes)
            try outliner.read(into: &builder)
        case .json:
            var outliner = JSONOutliner(bytes: bytes)
            try outliner.read(into: &builder)
        case .binaryPlist:
            throw PlistSyntaxError(offset: 0, problem: "a binary property list has no text to outline")
        }
        guard let root = builder.root else {
            throw PlistSyntaxError(offset: bytes.count, problem: "the document holds no value")
        }
        self.nodes = builder.nodes
        self.root = root
    }

    package init(text: String, format: PolicyFileFormat) throws(PlistSyntaxError) {
        try self.init(bytes: Array(text.utf8), format: format)
    }

    /// The value a decoder keeps for `key` in a dictionary: the last one written (Foundation's XML reader
    /// keeps the last, as Apple's does), or for JSON the one `JSONDecoder` keeps, the first.
    package func child(of node: Int, key: String) -> Entry? {
        let entries = nodes[node].entries
        return format == .json ? entries.first { $0.key == key } : entries.last { $0.key == key }
    }

    /// An array's element.
    package func element(of node: Int, at index: Int) -> Int? {
        let elements = nodes[node].elements
        return elements.indices.contains(index) ? elements[index] : nil
    }

    /// The node a decoder's coding path leads to, from the root (keys, and array indexes as `intValue`).
    package func node(at codingPath: [any CodingKey]) -> Int? {
        var node = root
        for key in codingPath {
            switch nodes[node].kind {
            case .dictionary:
                guard let entry = child(of: node, key: key.stringValue) else { return nil }
                node = entry.value
            case .array:
                guard let index = key.intValue, let element = element(of: node, at: index) else { return nil }
                node = element
            case .scalar:
                return nil
            }
        }
        return node
    }

    /// The value of a node as the loader's decoder reads it, so two values compare as the loader sees them.
    /// nil when it does not decode on its own.
    package func value(of node: Int) -> PlistValue? {
        var slice = Array(bytes[nodes[node].start..<nodes[node].end])
        switch format {
        case .xmlPlist:
            // Foundation's reader refuses a document that ends right after a tag's `>`.
            slice.append(UInt8(ascii: "\n"))
            return try? PropertyListDecoder().decode(PlistValue.self, from: Data(slice))
        case .json:
            return try? JSONDecoder().decode(PlistValue.self, from: Data(slice))
        case .binaryPlist:
            return nil
        }
    }

    package func position(of offset: Int) -> TextPosition { lines.position(of: offset) }
    package func line(of offset: Int) -> Int { lines.line(of: offset) }

    /// Collects nodes as an outliner reads them; containers are filled in when they close.
    struct Builder {
        var nodes: [Node] = []
        var root: Int?
        /// Open containers and, for dictionaries, the key waiting for its value.
        private var open: [(node: Int, key: (text: String, start: Int)?)] = []

        /// Adds a value at `start`; containers stay open until `close(at:)`.
        mutating func begin(_ kind: Kind, at start: Int) {
            let index = nodes.count
            nodes.append(Node(kind: kind, start: start, end: start))
            attach(index)
            if kind != .scalar { open.append((index, nil)) }
        }

        /// Ends the innermost open container, or the scalar just begun, at `end`.
        mutating func end(at end: Int) {
            nodes[nodes.count - 1].end = end
        }

        mutating func close(at end: Int) {
            let container = open.removeLast()
            nodes[container.node].end = end
        }

        mutating func key(_ text: String, at start: Int) {
            open[open.count - 1].key = (text, start)
        }

        private mutating func attach(_ index: Int) {
            guard let parent = open.last else {
                if root == nil { root = index }
                return
            }
            if nodes[parent.node].kind == .dictionary, let key = parent.key {
                nodes[parent.node].entries.append(Entry(key: key.text, keyStart: key.start, value: index))
                open[open.count - 1].key = nil
            } else {
                nodes[parent.node].elements.append(index)
            }
        }
    }
}

/// Where a document breaks and what was expected there: "expected </dict> to close <dict> (line 4,
/// column 1), found </plist>".
package struct PlistSyntaxError: Error, Sendable, Equatable {
    /// Byte offset of the break.
    package var offset: Int
    /// What was expected and what was found, one line.
    package var problem: String
}

/// Text from a broken document quoted in a message: bounded, on one line, control characters escaped.
enum SyntaxQuote {
    static func quoted(_ bytes: ArraySlice<UInt8>, limit: Int = 24) -> String {
        var out = ""
        var count = 0
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if count == limit { return out + "..." }
            if scalar.properties.generalCategory == .control || scalar == "\u{FFFD}" {
                out += scalar.escaped(asASCII: true)
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }
}
